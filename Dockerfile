# syntax=docker/dockerfile:1
# ironet: one image, one CLI (`ironet controller`, `ironet agent`).
# Build: docker build -t ironet .   (every COPY source below is checked by test/cmd/build.test.ts)

FROM node:20-bookworm AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
# A smaller young generation: the controller's heap churns through API objects;
# 4 MB semi-spaces cut peak RSS by about a quarter at no cost in speed
# (docs/benchmarks.md, npm run bench:ipam). The bench reads this line.
ENV NODE_OPTIONS="--max-semi-space-size=4"
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
RUN chmod +x dist/cmd/main.js && ln -s /app/dist/cmd/main.js /usr/local/bin/ironet
# The controller needs no privileges; the agent's capabilities are set by the chart.
USER 65532:65532
ENTRYPOINT ["ironet"]
CMD ["help"]
