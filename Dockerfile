# syntax=docker/dockerfile:1
# ironet: one image, one CLI (`ironet controller`, `ironet agent`).
# Build: docker build -t ironet .   (every COPY source below is checked by test/cmd/build.test.ts)
#
# Base images: the official node images of the Node.js the tests run on
# (NODE_VERSION = tools/node/versions.env, checked by test/cmd/dockerfile.test.ts),
# pinned by the digest of each tag's multi-arch index once recorded: run
# `sh scripts/pin-base-images.sh` (crane, skopeo or docker buildx on a machine
# that reaches Docker Hub) and commit the result. While a digest is empty the
# stage is built from its tag alone (still checked for the pinned node below);
# ADR 0028 says which digests are recorded (none yet: Docker Hub was out of reach).
ARG NODE_VERSION=24.22.3
ARG NODE_BUILD_DIGEST=
ARG NODE_RUNTIME_DIGEST=

FROM node:${NODE_VERSION}-bookworm${NODE_BUILD_DIGEST:+@}${NODE_BUILD_DIGEST} AS build
ARG NODE_VERSION
# a digest of another tag would go unnoticed otherwise
RUN test "$(node --version)" = "v${NODE_VERSION}"
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY native ./native
COPY scripts/build-native.sh ./scripts/build-native.sh
RUN sh scripts/build-native.sh
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev

FROM node:${NODE_VERSION}-bookworm-slim${NODE_RUNTIME_DIGEST:+@}${NODE_RUNTIME_DIGEST}
ARG NODE_VERSION
RUN test "$(node --version)" = "v${NODE_VERSION}"
WORKDIR /app
# The iPXE binaries the agent serves by TFTP (the chart's default agent.tftpRoot):
# Debian's ipxe, under the names DHCP hands out (docs/dhcp.md "TFTP").
RUN apt-get update && apt-get install -y --no-install-recommends ipxe && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /usr/share/ironet/tftp \
 && ln -s /usr/lib/ipxe/undionly.kpxe /usr/share/ironet/tftp/undionly.kpxe \
 && ln -s /usr/lib/ipxe/snponly.efi /usr/share/ironet/tftp/snponly-x86_64.efi
ENV NODE_ENV=production
# Heap sizing for a controller whose caches hold every claim and address: a 4 MB
# young generation and a 256 MB old-space ceiling make V8 collect before the
# heap balloons (5,000 claims: peak RSS 238 → ~115 MB; docs/benchmarks.md).
# Live heap is ~11 KB per claim with its address, so 256 MB serves about
# 20,000 claims; raise it (and the pod's memory limit) beyond that.
# npm run bench:ipam reads this line.
ENV NODE_OPTIONS="--max-semi-space-size=4 --max-old-space-size=256"
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY --from=build /src/native/build/Release/ironet.node ./native/build/Release/ironet.node
RUN chmod +x dist/cmd/main.js && ln -s /app/dist/cmd/main.js /usr/local/bin/ironet
# The controller needs no privileges; the agent's capabilities (NET_ADMIN,
# NET_RAW, SYS_ADMIN for setns) are set by the chart (docs/vip.md).
USER 65532:65532
ENTRYPOINT ["ironet"]
CMD ["help"]
