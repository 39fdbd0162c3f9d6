import { connect, type Socket } from 'node:net'

/** A raw connection the caller holds open: what it has been answered so far, and a way to drop it. */
export interface Slow {
  socket: Socket
  text(): string
  stop(): void
}

/**
 * Issue 46's slow-body repro, shared by its bench (`bench/holes.ts`) and its test (`tests/balancer-abuse.test.ts`):
 * an anonymous sign-in from `localAddress` whose declared 3,000-byte body arrives a byte every 300 ms.
 */
export function slowSignIn(port: number, localAddress: string): Slow {
  const socket = connect({ port, host: '127.0.0.1', localAddress })
  let got = ''
  socket.on('data', (d) => (got += d.toString()))
  socket.on('error', () => {})
  socket.write(`POST /api/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 3000\r\n\r\n{"company_id":`)
  const timer = setInterval(() => socket.writable && socket.write(' '), 300)
  socket.on('close', () => clearInterval(timer))
  return { socket, text: () => got, stop: () => (clearInterval(timer), socket.destroy()) }
}
