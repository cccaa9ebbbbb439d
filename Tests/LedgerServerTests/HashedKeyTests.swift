import Foundation
import XCTest
@testable import LedgerStorageSQLite

/// The writer's dictionary keys carry their string's hash, computed once, and a memo hands
/// out the last key again: a key must still be its string, whichever copy of it is asked
/// for and in whatever order households and children come.
final class HashedKeyTests: XCTestCase {
    /// The same text in separate storage (as two requests' ids are).
    private func copy(_ s: String) -> String { String(decoding: Array(s.utf8), as: UTF8.self) }

    func testAKeyIsItsStringWhicheverCopy() {
        let id = UUID().uuidString.lowercased()
        let a = HashedKey(id), b = HashedKey(copy(id))
        XCTAssertEqual(a, b)
        XCTAssertEqual(a.hashValue, b.hashValue)
        XCTAssertEqual(a.hashValue, HashedKey(copy(id)).hashValue)
        XCTAssertNotEqual(a, HashedKey(UUID().uuidString.lowercased()))
        // Ids that differ in their last character only, or in length, are other keys.
        XCTAssertNotEqual(HashedKey(id), HashedKey(String(id.dropLast()) + (id.last == "0" ? "1" : "0")))
        XCTAssertNotEqual(HashedKey(id), HashedKey(id + "0"))
        XCTAssertNotEqual(HashedKey(""), HashedKey("0"))

        var d: [HashedKey: Int] = [:]
        d[a] = 1
        XCTAssertEqual(d[HashedKey(copy(id))], 1)
        XCTAssertNil(d[HashedKey(copy(id) + "x")])
    }

    func testTheMemoFollowsTheStringsAskedFor() {
        var memo = KeyMemo()
        let ids = (0..<3).map { _ in UUID().uuidString.lowercased() }
        for id in ids + ids.reversed() + [ids[0], ids[0], ids[1], ids[0]] {
            XCTAssertEqual(memo.key(id).string, id)
            XCTAssertEqual(memo.key(copy(id)), HashedKey(id))
        }
        XCTAssertEqual(memo.key("").string, "")
        XCTAssertEqual(memo.key("short").string, "short")
    }

    /// The memo's key keeps the first of equal strings (the copy the dictionaries hold),
    /// whichever copy is asked for after it, and a new string after a copy is a new key.
    func testTheMemoKeepsTheFirstCopyOfEqualStrings() {
        func address(_ s: String) -> UnsafeRawPointer? {
            var s = s
            return s.withUTF8 { UnsafeRawPointer($0.baseAddress) }
        }
        var memo = KeyMemo()
        let first = UUID().uuidString.lowercased()
        let key = memo.key(first)
        for _ in 0..<3 {
            let other = copy(first)
            XCTAssertNotEqual(address(other), address(first))
            XCTAssertEqual(address(memo.key(other).string), address(first))
            XCTAssertEqual(address(memo.key(other).string), address(first))
        }
        XCTAssertEqual(memo.key(first), key)
        let next = UUID().uuidString.lowercased()
        XCTAssertEqual(memo.key(next).string, next)
        XCTAssertEqual(memo.key(copy(first)).string, first)
    }

    /// Through the writer's state: households and children taking turns keep their own
    /// seqs and balances.
    func testHeldRowsOfAlternatingHouseholdsStayApart() {
        let state = WriterRowState()
        let (h1, h2) = (UUID().uuidString.lowercased(), UUID().uuidString.lowercased())
        let (c1, c2) = (UUID().uuidString.lowercased(), UUID().uuidString.lowercased())
        state.seqWritten(household: h1, seq: 10)
        state.seqWritten(household: copy(h2), seq: 20)
        XCTAssertEqual(state.advanceSeq(household: copy(h1)), 11)
        XCTAssertEqual(state.advanceSeq(household: h2), 21)
        XCTAssertEqual(state.peekSeq(household: h1), 12)
        XCTAssertEqual(state.advanceSeq(household: h1), 12)
        XCTAssertEqual(state.peekSeq(household: copy(h2)), 22)
        XCTAssertNil(state.peekSeq(household: UUID().uuidString.lowercased()))
        state.setBalance(household: h1, child: c1, cents: 5)
        state.setBalance(household: h1, child: c2, cents: -7)
        state.setBalance(household: copy(h1), child: copy(c1), cents: 6)
        XCTAssertEqual(state.balance(household: h1, child: c1), 6)
        XCTAssertEqual(state.balance(household: copy(h1), child: c2), -7)
        XCTAssertNil(state.balance(household: h2, child: c1))
        XCTAssertNil(state.ledgerKey(household: h1))
    }
}
