/**
 * The http tool of `bench:consent`, in a process of its own (as a real tool server is): it answers every
 * call at once (or after TOOL_DELAY_MS, so that no run goes on while others still resume) and tells the
 * parent, over IPC, when each call arrived (by tool_call_id), on the clock both processes share
 * (`performance.timeOrigin + performance.now()`).
 */
import { createServer } from 'node:http';
import { AddressInfo } from 'node:net';

const server = createServer((req, res) => {
  const at = performance.timeOrigin + performance.now();
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { tool_call_id: string };
    res.setHeader('content-type', 'application/json');
    setTimeout(() => res.end('{"ok":true}'), Number(process.env.TOOL_DELAY_MS ?? 0));
    process.send!({ toolCallId: body.tool_call_id, at });
  });
});
server.listen(0, '127.0.0.1', () => {
  process.send!({ listening: `http://127.0.0.1:${(server.address() as AddressInfo).port}/pay` });
});
process.on('disconnect', () => process.exit(0));
