import Foundation
import HTTPServer
@testable import LedgerServer
import XCTest

final class ClientAddressTests: XCTestCase {
    func request(from peer: String, forwardedFor: String?) -> HTTPRequest {
        var h = HTTPHeaders()
        if let forwardedFor { h.add("X-Forwarded-For", forwardedFor) }
        return HTTPRequest(method: "GET", target: "/", headers: h, remoteAddress: peer)
    }

    func testOnlyTrustedProxiesAreBelieved() {
        let a = ClientAddress(trusted: ["127.0.0.1", "10.0.0.0/8", "fd00::/8"])
        XCTAssertEqual(a.resolve(request(from: "127.0.0.1", forwardedFor: "203.0.113.7")), "203.0.113.7")
        XCTAssertEqual(a.resolve(request(from: "::ffff:127.0.0.1", forwardedFor: "203.0.113.7")), "203.0.113.7")
        XCTAssertEqual(a.resolve(request(from: "10.20.30.40", forwardedFor: "198.51.100.1, 10.0.0.2")), "198.51.100.1")
        XCTAssertEqual(a.resolve(request(from: "fd12:3456::1", forwardedFor: "2001:db8::5")), "2001:db8::5")
        XCTAssertEqual(a.resolve(request(from: "192.0.2.9", forwardedFor: "203.0.113.7")), "192.0.2.9", "an untrusted peer's header is ignored")
        XCTAssertEqual(a.resolve(request(from: "fe80::1", forwardedFor: "203.0.113.7")), "fe80::1")
        XCTAssertEqual(a.resolve(request(from: "127.0.0.1", forwardedFor: nil)), "127.0.0.1")
    }

    func testNetworks() {
        XCTAssertEqual(ClientAddress.network("10.0.0.0/8"), .init(bytes: [10, 0, 0, 0], prefixBits: 8))
        XCTAssertEqual(ClientAddress.network("::ffff:10.0.0.0/104"), .init(bytes: [10, 0, 0, 0], prefixBits: 8))
        XCTAssertEqual(ClientAddress.network("::1")?.prefixBits, 128)
        XCTAssertTrue(ClientAddress.network("0.0.0.0/0")!.contains([192, 0, 2, 1]))
        XCTAssertTrue(ClientAddress.network("192.168.1.0/23")!.contains([192, 168, 0, 255]))
        XCTAssertFalse(ClientAddress.network("192.168.1.0/24")!.contains([192, 168, 0, 255]))
        XCTAssertFalse(ClientAddress.network("10.0.0.0/8")!.contains(ClientAddress.address("fd00::1")!))
        for bad in ["10.0.0.0/33", "fd00::/129", "10.0.0.0/", "10.0.0/8", "localhost", "10.0.0.0/8/8", "10.0.0.0/-1", "10.0.0.0/ 8", ""] {
            XCTAssertNil(ClientAddress.network(bad), bad)
        }
        var c = LedgerAppConfiguration(dataDirectory: "/tmp/x", host: "127.0.0.1", port: 0)
        c.trustedProxies = ["127.0.0.1", "fd00::/8", "10.0.0.0/33", "proxy"]
        XCTAssertEqual(c.invalidTrustedProxies, ["10.0.0.0/33", "proxy"])
    }

    /// A forwarded entry counts only as an address: its port and brackets go, and anything
    /// that is not an address leaves the peer as the client (so varying it gains nothing).
    func testAForwardedEntryIsParsedAsAnAddressOrIgnored() {
        let a = ClientAddress(trusted: ["127.0.0.1"])
        let cases: [(String, String)] = [
            ("10.1.1.1:1234", "10.1.1.1"),
            ("203.0.113.7:1234", "203.0.113.7"),
            ("203.0.113.7:65535", "203.0.113.7"),
            ("[2001:db8::1]:443", "2001:db8::1"),
            ("[2001:DB8:0::1]", "2001:db8::1"),
            ("2001:db8:0:0::1", "2001:db8::1"),
            ("::ffff:203.0.113.7", "203.0.113.7"),
            ("[::ffff:203.0.113.7]:80", "203.0.113.7"),
            ("garbage", "127.0.0.1"),
            ("1.2.3.4.5", "127.0.0.1"),
            ("1.2.3", "127.0.0.1"),
            ("01.2.3.4", "127.0.0.1"),
            ("203.0.113.7:", "127.0.0.1"),
            ("203.0.113.7:65536", "127.0.0.1"),
            ("203.0.113.7:12a", "127.0.0.1"),
            ("203.0.113.7:+80", "127.0.0.1"),
            ("[203.0.113.7]:80", "127.0.0.1"),
            ("[2001:db8::1", "127.0.0.1"),
            ("[2001:db8::1]443", "127.0.0.1"),
            ("2001:db8::1:443:", "127.0.0.1"),
            ("fe80::1%eth0", "127.0.0.1"),
            ("unknown", "127.0.0.1"),
            ("", "127.0.0.1"),
            ("  ", "127.0.0.1"),
            (String(repeating: "1", count: 10_000), "127.0.0.1"),
            (String(repeating: "1.", count: 3_000) + "1", "127.0.0.1"),
            // Left of an entry that is not an address, the client wrote the header itself.
            ("203.0.113.7, garbage", "127.0.0.1"),
            ("garbage, 203.0.113.7:99", "203.0.113.7"),
        ]
        for (forwarded, client) in cases {
            let resolved = a.resolve(request(from: "127.0.0.1", forwardedFor: forwarded))
            XCTAssertEqual(resolved, client, String(forwarded.prefix(40)))
            XCTAssertEqual(ClientKey(resolved), ClientKey(client), String(forwarded.prefix(40)))
        }
        // A trusted proxy's own entry may carry a port too.
        let b = ClientAddress(trusted: ["127.0.0.1", "10.0.0.0/8"])
        XCTAssertEqual(b.resolve(request(from: "127.0.0.1", forwardedFor: "198.51.100.1, 10.0.0.2:8080")), "198.51.100.1")
        XCTAssertEqual(b.resolve(request(from: "127.0.0.1", forwardedFor: "[::ffff:10.0.0.2]:80")), "127.0.0.1")
        XCTAssertNil(ClientAddress.forwarded("203.0.113.7\u{0}1"))
        XCTAssertNil(ClientAddress.address("203.0.113.7\u{0}"), "no NUL reaches inet_pton")
        // Varying the port keeps one client.
        let keys = Set((1...50).map { ClientKey(a.resolve(request(from: "127.0.0.1", forwardedFor: "203.0.113.7:\($0)"))) })
        XCTAssertEqual(keys, [ClientKey("203.0.113.7")])
    }

    /// One key per IPv4 address (mapped or not) and per IPv6 /64, for every per-address limit.
    func testClientKeys() {
        XCTAssertEqual(ClientKey("192.0.2.1"), .ipv4(0xC000_0201))
        XCTAssertEqual(ClientKey("::ffff:192.0.2.1"), ClientKey("192.0.2.1"))
        XCTAssertNotEqual(ClientKey("192.0.2.1"), ClientKey("192.0.2.2"))
        XCTAssertEqual(ClientKey("2001:db8:1:2::1"), .ipv6Network(0x2001_0db8_0001_0002))
        XCTAssertEqual(ClientKey("2001:db8:1:2:ffff:ffff:ffff:ffff"), ClientKey("2001:db8:1:2::1"))
        XCTAssertNotEqual(ClientKey("2001:db8:1:3::1"), ClientKey("2001:db8:1:2::1"))
        XCTAssertNotEqual(ClientKey("::c000:201"), ClientKey("192.0.2.1"), "IPv4-compatible is IPv6")
        XCTAssertEqual(ClientKey("unix"), .other("unix"))
    }
}
