import { describe, expect, test } from 'bun:test'
import { clientIp, ipPrefix } from '../../src/platform/ip'

const PROXY = '10.0.0.1'

describe('clientIp', () => {
  test('a peer that is not a trusted proxy is the client, whatever X-Forwarded-For claims', () => {
    expect(clientIp('203.0.113.7', '1.2.3.4', [])).toBe('203.0.113.7')
    expect(clientIp('203.0.113.7', '1.2.3.4', [PROXY])).toBe('203.0.113.7')
  })

  test('behind a trusted proxy the right-most hop is the client', () => {
    expect(clientIp(PROXY, '198.51.100.9, 203.0.113.5', [PROXY])).toBe('203.0.113.5')
  })

  test('a client cannot pick its address by prepending hops', () => {
    // The client sent "X-Forwarded-For: 8.8.8.8"; the proxy appended the address it saw.
    expect(clientIp(PROXY, '8.8.8.8, 203.0.113.5', [PROXY])).toBe('203.0.113.5')
  })

  test('trusted proxies in the chain are skipped to reach the right-most untrusted hop', () => {
    expect(clientIp(PROXY, '8.8.8.8, 203.0.113.5, 10.0.0.2', [PROXY, '10.0.0.2'])).toBe('203.0.113.5')
  })

  test('when every hop is a trusted proxy the peer is the client', () => {
    expect(clientIp(PROXY, '10.0.0.2', [PROXY, '10.0.0.2'])).toBe(PROXY)
  })

  test('a trusted proxy without X-Forwarded-For is itself the client', () => {
    expect(clientIp(PROXY, null, [PROXY])).toBe(PROXY)
    expect(clientIp(PROXY, '', [PROXY])).toBe(PROXY)
  })

  test('hops that are not addresses are ignored', () => {
    expect(clientIp(PROXY, '203.0.113.5, unknown, 203.0.113.9:443', [PROXY])).toBe('203.0.113.5')
    expect(clientIp(PROXY, 'garbage', [PROXY])).toBe(PROXY)
  })

  test('an IPv4-mapped IPv6 peer or hop is read as its IPv4 address', () => {
    expect(clientIp('::ffff:1.2.3.4', null, [])).toBe('1.2.3.4')
    expect(clientIp('::FFFF:1.2.3.4', '9.9.9.9', [])).toBe('1.2.3.4')
    expect(clientIp('::ffff:10.0.0.1', '203.0.113.5', [PROXY])).toBe('203.0.113.5')
    expect(clientIp(PROXY, '::ffff:203.0.113.5', [PROXY])).toBe('203.0.113.5')
    expect(clientIp(PROXY, '203.0.113.5, ::ffff:10.0.0.2', [PROXY, '10.0.0.2'])).toBe('203.0.113.5')
  })

  test('IPv6 addresses compare without regard to case', () => {
    expect(clientIp('2001:DB8::1', null, [])).toBe('2001:db8::1')
    expect(clientIp('2001:db8::a', '2001:db8:1::5', ['2001:DB8::A'])).toBe('2001:db8:1::5')
  })
})

describe('ipPrefix', () => {
  test('an IPv4 address counts by its /24', () => {
    expect(ipPrefix('203.0.113.77')).toBe('203.0.113.0/24')
    expect(ipPrefix('203.0.113.1')).toBe(ipPrefix('203.0.113.254'))
    expect(ipPrefix('203.0.114.1')).not.toBe(ipPrefix('203.0.113.1'))
  })

  test('an IPv6 address counts by its /64', () => {
    expect(ipPrefix('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64')
    expect(ipPrefix('2001:0DB8:0001:0002:ffff:ffff:ffff:ffff')).toBe('2001:db8:1:2::/64')
    expect(ipPrefix('2001:db8:1:3::1')).not.toBe(ipPrefix('2001:db8:1:2::1'))
  })

  test('compressed IPv6 is expanded before taking the /64', () => {
    expect(ipPrefix('2001:db8::1')).toBe('2001:db8:0:0::/64')
    expect(ipPrefix('2001:db8::1')).toBe(ipPrefix('2001:db8:0:0:ffff::2'))
    expect(ipPrefix('2001:db8:0:1::')).toBe('2001:db8:0:1::/64')
    expect(ipPrefix('::1')).toBe('0:0:0:0::/64')
    expect(ipPrefix('::')).toBe('0:0:0:0::/64')
    expect(ipPrefix('fe80::1:2:3:4')).toBe('fe80:0:0:0::/64')
    expect(ipPrefix('2001:db8:1:2:3::')).toBe('2001:db8:1:2::/64')
  })

  test('every spelling of one IPv6 address gives the same /64', () => {
    const spellings = ['2001:db8:0:5::9', '2001:DB8:0:5:0:0:0:9', '2001:0db8:0000:0005:0000:0000:0000:0009', '2001:db8::5:0:0:0:9']
    for (const s of spellings) expect(ipPrefix(s)).toBe('2001:db8:0:5::/64')
  })

  test('an IPv6 address with an embedded IPv4 tail counts the tail as two groups', () => {
    expect(ipPrefix('2001:db8:1:2:3:4:1.2.3.4')).toBe('2001:db8:1:2::/64')
    expect(ipPrefix('2001::3:4:5:1.2.3.4')).toBe('2001:0:0:3::/64')
    expect(ipPrefix('64:ff9b::192.0.2.33')).toBe('64:ff9b:0:0::/64')
  })

  test('something that is not an address is its own bucket', () => {
    expect(ipPrefix('unknown')).toBe('unknown')
  })
})
