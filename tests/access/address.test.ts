import { describe, expect, test } from 'bun:test'
import { clientAddress, isHealthCheck } from '../../server/access/address'

const peer = (address: string) => ({ requestIP: () => ({ address }) })
const request = (path: string, headers: Record<string, string> = {}) => new Request(`http://fos.test${path}`, { headers })

describe('the client address', () => {
  test('the last X-Forwarded-For entry when the balancer is trusted; the peer otherwise, or when it sent none', () => {
    const forwarded = request('/api/tags', { 'x-forwarded-for': '10.0.0.9, 198.51.100.7' })
    expect(clientAddress(forwarded, peer('127.0.0.1'), true)).toBe('198.51.100.7')
    // Untrusted, what the client wrote is nobody's address.
    expect(clientAddress(forwarded, peer('127.0.0.1'), false)).toBe('127.0.0.1')
    // The balancer's own health checks carry no forwarded address.
    expect(clientAddress(request('/health'), peer('127.0.0.1'), true)).toBe('127.0.0.1')
    expect(clientAddress(request('/api/tags'), null, true)).toBeNull()
  })

  test('/health and anything under it are the balancer\'s checks; nothing else is', () => {
    for (const path of ['/health', '/health/ready', '/health/ready?verbose=1', '/health?x=1']) expect(isHealthCheck(request(path))).toBe(true)
    for (const path of ['/healthz', '/api/health', '/health-report', '/api/tags?next=/health']) expect(isHealthCheck(request(path))).toBe(false)
  })
})
