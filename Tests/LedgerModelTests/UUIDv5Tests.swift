import Foundation
import XCTest
@testable import LedgerModel

final class UUIDv5Tests: XCTestCase {
    func testReversalVectorFromTheContract() {
        let t = UUID(uuidString: "3f0a9db7-21c5-4f2a-9b1e-0c7d3a1e2b44")!
        XCTAssertEqual(LedgerIDs.reversalID(of: t).lowercased, "eb668038-4871-5198-9e76-336198a58894")
    }

    func testRFCExampleDNSNamespace() {
        // RFC 9562 appendix: UUIDv5(DNS, "www.example.com")
        let dns = UUID(uuidString: "6ba7b810-9dad-11d1-80b4-00c04fd430c8")!
        XCTAssertEqual(UUIDv5.make(namespace: dns, name: "www.example.com").lowercased,
                       "2ed6657d-e927-568b-95e1-2665a8aea6a2")
    }

    func testIdempotencyIdIsDeterministicAndKeyed() {
        let a = UUID(uuidString: "00000000-0000-4000-8000-000000000001")!
        XCTAssertEqual(LedgerIDs.idempotencyID(accountId: a, key: "k1"), LedgerIDs.idempotencyID(accountId: a, key: "k1"))
        XCTAssertNotEqual(LedgerIDs.idempotencyID(accountId: a, key: "k1"), LedgerIDs.idempotencyID(accountId: a, key: "k2"))
        XCTAssertEqual(LedgerIDs.idempotencyID(accountId: a, key: "k1"),
                       UUIDv5.make(namespace: LedgerIDs.namespace, name: "idempotency:00000000-0000-4000-8000-000000000001:k1"))
    }

    /// Reversal and idempotency ids hash their names written in parts straight into the
    /// hash's buffer: the same ids as the names spelled out as strings.
    func testIdsFromNamesWrittenInPartsEqualTheSpelledOutNames() {
        for key in ["k", "", "clé-🙂", String(repeating: "x", count: 255)] {
            let account = UUID()
            XCTAssertEqual(LedgerIDs.idempotencyID(accountId: account, key: key),
                           UUIDv5.make(namespace: LedgerIDs.namespace, name: "idempotency:" + account.uuidString.lowercased() + ":" + key))
            XCTAssertEqual(LedgerIDs.reversalID(of: account),
                           UUIDv5.make(namespace: LedgerIDs.namespace, name: "reversal:" + account.uuidString.lowercased()))
        }
        XCTAssertEqual(UUIDv5.make(namespace: LedgerIDs.namespace, name: ""),
                       UUIDv5.make(namespace: LedgerIDs.namespace, nameMaxCount: 0) { _ in })
    }

    func testMessagesAtThePaddingEdgesAndLongerThanOneBlock() {
        // 16 namespace bytes + the name: 55, 56, 64 and 216 bytes hashed (Python's uuid5).
        let dns = UUID(uuidString: "6ba7b810-9dad-11d1-80b4-00c04fd430c8")!
        for (n, expected) in [(39, "5824f981-4282-59d4-9716-acb6d741350e"), (40, "39f39c20-db47-5131-8879-62f8f67f9014"),
                              (48, "7280cc42-274a-5c4a-91fc-ae23f853eeb7"), (200, "fe30bfa6-ef90-59b3-b108-118411d0f0ab")] {
            XCTAssertEqual(UUIDv5.make(namespace: dns, name: String(repeating: "a", count: n)).lowercased, expected, "name of \(n) bytes")
        }
    }

    private func sha1Hex(_ message: [UInt8]) -> String {
        SHA1.digest(message).map { String(format: "%02x", $0) }.joined()
    }

    func testSHA1KnownAnswers() {
        // FIPS 180 examples: one block, empty, two blocks (448 and 896 bits), a million "a".
        XCTAssertEqual(sha1Hex(Array("abc".utf8)), "a9993e364706816aba3e25717850c26c9cd0d89d")
        XCTAssertEqual(sha1Hex([]), "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        XCTAssertEqual(sha1Hex(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)),
                       "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
        XCTAssertEqual(sha1Hex(Array(("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
                                      + "hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu").utf8)),
                       "a49b2446a02c645bf419f995b67091253a04a259")
        XCTAssertEqual(sha1Hex([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)),
                       "34aa973cd4c4daa4f61eeb2bdbad27316534016f")
    }

    /// Lengths around the padding edges (the length fits in the last block or needs one
    /// more) and whole blocks read in place; bytes (7 i + 3) mod 256, digests from Python's hashlib.
    func testSHA1AtBlockAndPaddingEdges() {
        let expected = [
            55: "ddf57317ef34bfee3b6df83d359098930eb278bc", 56: "a0d492bb0fc889d0eca3bc137066ab6f4f74f369",
            63: "c55856749bef509bdfe6bfebfc7bf4e793e82132", 64: "bede92be29c3874e1b54ddc77988d606fc857a8e",
            65: "b05a80522b053d6dc7e0a517d0e70212c7dad11f", 119: "504e27376a6e0f0dba8295b85cb25dc4dfa17d23",
            120: "82134b02fb3f702491be9bed581eeab59334acb2", 127: "34d5e582029e9b9b85b2febe31da3db7cdabaaea",
            128: "a09133e6730ffe899efb70204cb5646cd5dc24ee",
        ]
        for (n, digest) in expected {
            let message = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
            XCTAssertEqual(sha1Hex(message), digest, "\(n) bytes")
            // The same bytes not at the start of their buffer: whole blocks are read unaligned.
            let shifted = [0xEE] + message
            let words = shifted.withUnsafeBytes { SHA1.words(UnsafeRawBufferPointer(rebasing: $0[1...])) }
            XCTAssertEqual([words.0, words.1, words.2, words.3, words.4].map { String(format: "%08x", $0) }.joined(), digest,
                           "\(n) bytes at an odd address")
        }
    }

    /// Lowercase canonical text is exactly what parsing and writing lowercase gives back:
    /// every byte at every position of an id, and ids in other cases.
    func testLowercaseCanonicalIsWhatParseAndLowercasedGiveBack() {
        let id = Array("3f0a9db7-21c5-4f2a-9b1e-0c7d3a1e2b44".utf8)
        func check(_ bytes: [UInt8], _ message: String) {
            let canonical = bytes.withUnsafeBufferPointer { LedgerIDs.isLowercaseCanonical(utf8: $0) }
            let roundTrip = LedgerIDs.parse(String(decoding: bytes, as: UTF8.self))?.lowercased
            XCTAssertEqual(canonical, roundTrip.map { Array($0.utf8) == bytes } ?? false, message)
        }
        for position in 0..<36 {
            for byte in 0...255 {
                var bytes = id
                bytes[position] = UInt8(byte)
                check(bytes, "byte \(byte) at \(position)")
            }
        }
        for text in ["3F0A9DB7-21C5-4F2A-9B1E-0C7D3A1E2B44", "3f0a9db7-21c5-4f2a-9b1e-0c7d3a1e2b4", "3f0a9db721c54f2a9b1e0c7d3a1e2b44",
                     "3f0a9db7-21c5-4f2a-9b1e-0c7d3a1e2b444", "", UUID().uuidString, UUID().uuidString.lowercased()] {
            check(Array(text.utf8), text)
        }
    }

    /// `lowercaseCanonical` is `parse(_:)?.lowercased` for every kind of input.
    func testLowercaseCanonicalOfAString() {
        var id = Array("3f0a9db7-21c5-4f2a-9b1e-0c7d3a1e2b44".utf8)
        var texts = ["3F0A9DB7-21C5-4F2A-9B1E-0C7D3A1E2B44", "3f0A9db7-21c5-4f2a-9b1e-0c7d3a1e2b44", "3f0a9db721c54f2a9b1e0c7d3a1e2b44",
                     "3f0a9db7-21c5-4f2a-9b1e-0c7d3a1e2b4", "", "not a uuid", "3f0a9db7-21c5-4f2a-9b1e-0c7d3a1e2b44 ",
                     "3f0a9db7-21c5-4f2a-9b1e-0c7d3a1e2b4é", UUID().uuidString, UUID().uuidString.lowercased()]
        for position in [0, 7, 8, 13, 35] {
            for byte: UInt8 in [0x2d, 0x30, 0x39, 0x41, 0x46, 0x47, 0x61, 0x66, 0x67, 0x7b] {
                let kept = id[position]
                id[position] = byte
                texts.append(String(decoding: id, as: UTF8.self))
                id[position] = kept
            }
        }
        for text in texts {
            XCTAssertEqual(LedgerIDs.lowercaseCanonical(text), LedgerIDs.parse(text)?.lowercased, text)
        }
    }

    /// The idempotency id from the account id as text is the one from the parsed id, in
    /// any case; malformed text has none.
    func testIdempotencyIdFromAccountText() {
        for _ in 0..<50 {
            let account = UUID()
            for text in [account.uuidString, account.uuidString.lowercased(), account.lowercased.capitalized] {
                for key in ["k", "", String(repeating: "x", count: 255)] {
                    XCTAssertEqual(LedgerIDs.idempotencyID(accountIdText: text, key: key),
                                   LedgerIDs.idempotencyID(accountId: account, key: key), text)
                }
            }
        }
        XCTAssertNil(LedgerIDs.idempotencyID(accountIdText: "3f0a9db7-21c5-4f2a-9b1e-0c7d3a1e2b4g", key: "k"))
        XCTAssertNil(LedgerIDs.idempotencyID(accountIdText: "", key: "k"))
    }

    func testParseAcceptsAnyCase() {
        XCTAssertEqual(LedgerIDs.parse("3F0A9DB7-21C5-4F2A-9B1E-0C7D3A1E2B44")?.lowercased, "3f0a9db7-21c5-4f2a-9b1e-0c7d3a1e2b44")
        XCTAssertEqual(LedgerIDs.parse("3f0A9db7-21C5-4f2a-9B1e-0c7d3a1e2b44"[...])?.lowercased, "3f0a9db7-21c5-4f2a-9b1e-0c7d3a1e2b44")
        XCTAssertNil(LedgerIDs.parse("3f0a9db7"))
        XCTAssertNil(LedgerIDs.parse("3f0a9db721c54f2a9b1e0c7d3a1e2b44"))
    }

    func testParseRejectsEveryMalformedShape() {
        for bad in ["3f0a9db7-21c5-4f2a-9b1e-0c7d3a1e2b4g", "3f0a9db7-21c5-4f2a-9b1e_0c7d3a1e2b44",
                    "3f0a9db721-c5-4f2a-9b1e-0c7d3a1e2b44", "-3f0a9db7-21c5-4f2a-9b1e-0c7d3a1e2b4",
                    "3f0a9db7-21c5-4f2a-9b1e-0c7d3a1e2b44 ", "{3f0a9db7-21c5-4f2a-9b1e-0c7d3a1e2b4}",
                    "3f0a9db7-21c5-4f2a-9b1e-0c7d3a1e2bé", "", String(repeating: "-", count: 36)] {
            XCTAssertNil(LedgerIDs.parse(bad), bad)
        }
    }

    /// Every byte at every position of an id, in both cases: an id when the shape is exact
    /// (dashes at 8, 13, 18 and 23, hex digits of either case elsewhere) with Foundation's
    /// value for it, else none (Foundation itself is laxer about dashes).
    func testParseAgreesWithFoundationForEveryByteAtEveryPosition() {
        func exactShape(_ bytes: [UInt8]) -> Bool {
            bytes.count == 36 && bytes.enumerated().allSatisfy { i, c in
                [8, 13, 18, 23].contains(i) ? c == 45 : (48...57).contains(c) || (65...70).contains(c) || (97...102).contains(c)
            }
        }
        for base in ["3f0a9db7-21c5-4f2a-9b1e-0c7d3a1e2b44", "A0B1C2D3-E4F5-A6B7-C8D9-EAFB0C1D2E3F"] {
            for position in 0..<36 {
                for byte in 0...255 {
                    var bytes = Array(base.utf8)
                    bytes[position] = UInt8(byte)
                    let text = String(decoding: bytes, as: UTF8.self)
                    let expected = exactShape(bytes) ? UUID(uuidString: text) : nil
                    XCTAssertEqual(LedgerIDs.parse(text), expected, "byte \(byte) at \(position)")
                    XCTAssertEqual(bytes.withUnsafeBufferPointer { LedgerIDs.parse(utf8: $0) }, expected, "byte \(byte) at \(position)")
                }
            }
        }
    }

    func testParseAndLowercasedAgreeWithFoundation() {
        for _ in 0..<2_000 {
            let u = UUID()
            XCTAssertEqual(u.lowercased, u.uuidString.lowercased())
            XCTAssertEqual(LedgerIDs.parse(u.uuidString), u)
            XCTAssertEqual(LedgerIDs.parse(u.uuidString.lowercased()), u)
        }
        let edge = UUID(uuid: (0, 0xFF, 0x0F, 0xF0, 9, 10, 0xA0, 0x90, 0, 0, 0, 0, 0, 0, 0, 0xFF))
        XCTAssertEqual(edge.lowercased, "00ff0ff0-090a-a090-0000-0000000000ff")
    }
}
