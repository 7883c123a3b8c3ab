#!/bin/sh
# Runs a command with the pinned Node.js (tools/node/versions.env) first on PATH,
# installing it into the cache first when it is missing (tools/node/install.sh):
# `node`, npm and npx, every `#!/usr/bin/env node` tool (mocha, tsc, eslint,
# node-gyp) and process.execPath in whatever they start are then that Node.
#   sh scripts/with-node.sh node --import tsx scripts/test.ts unit
set -eu
bin=$(sh "$(dirname "$0")/../tools/node/install.sh")
case ":$PATH:" in
  ":$bin:"*) ;;
  *) PATH="$bin:$PATH"; export PATH ;;
esac
exec "$@"
