/**
 * The dissector's entry: `node dist/cmd/dissect.js`, started by the agent
 * only, inside its sandbox (src/sandbox/launch.ts). Reads requests from stdin,
 * answers each in order on stdout (src/sandbox/protocol.ts), and exits when
 * stdin ends or breaks its protocol. It imports the packet decoders and
 * nothing else of ironet: no client, no sockets.
 */
import { dissect } from '../sandbox/dissect.js';
import { decodeRequest, encodeAnswer, FrameSplitter, MAX_REQUEST_BYTES } from '../sandbox/protocol.js';

function main(): void {
  const splitter = new FrameSplitter(MAX_REQUEST_BYTES);
  process.stdout.on('error', () => process.exit(0)); // the agent is gone
  process.stdin.on('end', () => process.exit(0));
  process.stdin.on('data', (chunk: Buffer) => {
    const { frames, problem } = splitter.push(chunk);
    const out: Buffer[] = [];
    for (const frame of frames) {
      const request = decodeRequest(frame);
      if (!request.ok) {
        process.stderr.write(`dissector: ${request.problem}\n`);
        process.exit(3);
      }
      out.push(encodeAnswer(request.id, dissect(request.kind, request.packet)));
    }
    if (out.length > 0) process.stdout.write(out.length === 1 ? out[0]! : Buffer.concat(out));
    if (problem) {
      process.stderr.write(`dissector: ${problem}\n`);
      process.exit(3);
    }
  });
}

main();
