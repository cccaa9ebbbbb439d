import Foundation
import LedgerModel

/// Reads a change-feed page (`GET …/changes`) straight from its bytes: one pass, plain strings
/// made directly from the buffer, no Foundation objects per record, because a join reads a
/// hundred pages of 1,000 records (figures in docs/performance.md).
///
/// A record that does not have the contract's shape (a missing field, a wrong
/// type) does not fail the page: it is returned in `unreadable` with its JSON text, so the rest
/// of the page can be merged and the record set aside. Only a page that is not JSON, or not an
/// object with the feed's fields, is an error.
enum FeedPageDecoder {
    static func decode(_ bytes: [UInt8]) throws(APIError) -> Wire.ChangesPage {
        do {
            return try bytes.withUnsafeBufferPointer { buffer throws(FeedSyntaxError) in
                var scanner = JSONScanner(buffer)
                return try scanner.page()
            }
        } catch {
            throw .invalidAnswer("change feed page: \(error.message) at byte \(error.offset)")
        }
    }
}

/// A page (or record) that is not the JSON the feed contract describes.
struct FeedSyntaxError: Error {
    var message: String
    var offset: Int
}

private struct JSONScanner {
    let b: UnsafeBufferPointer<UInt8>
    var i = 0

    init(_ b: UnsafeBufferPointer<UInt8>) { self.b = b }

    func fail(_ message: String) -> FeedSyntaxError { FeedSyntaxError(message: message, offset: i) }

    // MARK: The page

    mutating func page() throws(FeedSyntaxError) -> Wire.ChangesPage {
        var page = Wire.ChangesPage(children: [], transactions: [], nextToken: nil, moreComing: false)
        var sawMore = false
        var first = true
        try enter(123, "'{'")
        while let key = try nextKey(&first) {
            switch key {
            case "children":
                var firstChild = true
                try enter(91, "'['")
                while try nextElement(&firstChild) {
                    let start = i
                    if let child = try record({ s throws(FeedSyntaxError) in try s.child() }) { page.children.append(child) }
                    else { page.unreadable.append(unreadable("child", from: start)) }
                }
            case "transactions":
                var firstTransaction = true
                page.transactions.reserveCapacity(1000)
                try enter(91, "'['")
                while try nextElement(&firstTransaction) {
                    let start = i
                    if let t = try record({ s throws(FeedSyntaxError) in try s.transaction() }) { page.transactions.append(t) }
                    else { page.unreadable.append(unreadable("transaction", from: start)) }
                }
            case "schedules":
                var firstSchedule = true
                try enter(91, "'['")
                while try nextElement(&firstSchedule) {
                    let start = i
                    if let s = try record({ s throws(FeedSyntaxError) in try s.decoded(Wire.Schedule.self) }) { page.schedules.append(s) }
                    else { page.unreadable.append(unreadable("schedule", from: start)) }
                }
            case "pots":
                var firstPot = true
                try enter(91, "'['")
                while try nextElement(&firstPot) {
                    let start = i
                    if let p = try record({ s throws(FeedSyntaxError) in try s.decoded(Wire.Pot.self) }) { page.pots.append(p) }
                    else { page.unreadable.append(unreadable("pot", from: start)) }
                }
            case "requests":
                var firstRequest = true
                try enter(91, "'['")
                while try nextElement(&firstRequest) {
                    let start = i
                    if let r = try record({ s throws(FeedSyntaxError) in try s.decoded(Wire.Request.self) }) { page.requests.append(r) }
                    else { page.unreadable.append(unreadable("request", from: start)) }
                }
            case "household":
                page.household = isNull() ? nil : try decoded(Wire.Household.self)
            case "access":
                page.access = isNull() ? nil : try decoded(Wire.Access.self)
            case "nextToken": page.nextToken = try optionalString()
            case "moreComing": page.moreComing = try bool(); sawMore = true
            default: try skipValue()
            }
        }
        ws()
        guard i == b.count else { throw fail("unexpected data after the page") }
        guard sawMore else { throw fail("no moreComing field") }
        return page
    }

    /// Decodes one record with `body`; nil (the scanner past the record) when it does not have
    /// the contract's shape but is still well-formed JSON.
    mutating func record<T>(_ body: (inout JSONScanner) throws(FeedSyntaxError) -> T) throws(FeedSyntaxError) -> T? {
        let start = i
        do { return try body(&self) } catch {
            i = start
            try skipValue()  // a syntax error here fails the page
            return nil
        }
    }

    /// The record that ends at the cursor and starts at `start`, set aside as JSON text.
    func unreadable(_ kind: String, from start: Int) -> Wire.UnreadableRecord {
        let text = String(decoding: UnsafeBufferPointer(rebasing: b[start..<i]), as: UTF8.self)
        var id = ""
        if case .object(let o)? = try? JSONValue.parse(text), case .string(let s)? = o["id"] { id = s.lowercased() }
        return Wire.UnreadableRecord(kind: kind, id: id, json: text, reason: "\(kind) does not match the change feed's format")
    }

    mutating func child() throws(FeedSyntaxError) -> Wire.Child {
        var id, name, createdAt, modifiedAt, modifiedBy: String?
        var householdId, changeTag: String?
        var sortOrder, balance: Int64?
        var archived: Bool?
        var first = true
        try enter(123, "'{'")
        while let key = try nextKey(&first) {
            switch key {
            case "id": id = try string()
            case "householdId": householdId = try optionalString()
            case "name": name = try string()
            case "sortOrder": sortOrder = try optionalInt()
            case "archived": archived = try bool()
            case "createdAt": createdAt = try string()
            case "modifiedAt": modifiedAt = try string()
            case "modifiedBy": modifiedBy = try string()
            case "changeTag": changeTag = try optionalString()
            case "balanceCents": balance = try optionalInt()
            default: try skipValue()
            }
        }
        guard let id, let name, let archived, let createdAt, let modifiedAt, let modifiedBy else { throw fail("child without a required field") }
        return Wire.Child(id: id, householdId: householdId, name: name, sortOrder: sortOrder, archived: archived, createdAt: createdAt,
                          modifiedAt: modifiedAt, modifiedBy: modifiedBy, changeTag: changeTag, balanceCents: balance)
    }

    mutating func transaction() throws(FeedSyntaxError) -> Wire.Transaction {
        var id, childId, createdAt: String?
        var householdId, note, source, recordedAt, author, reversesId, reversedById, potId: String?
        var amount: Int64?
        var first = true
        try enter(123, "'{'")
        while let key = try nextKey(&first) {
            switch key {
            case "id": id = try string()
            case "householdId": householdId = try optionalString()
            case "childId": childId = try string()
            case "amountCents": amount = try int()
            case "note": note = try optionalString()
            case "source": source = try optionalString()
            case "createdAt": createdAt = try string()
            case "recordedAt": recordedAt = try optionalString()
            case "authorAccountId": author = try optionalString()
            case "reversesId": reversesId = try optionalString()
            case "reversedById": reversedById = try optionalString()
            case "potId": potId = try optionalString()
            default: try skipValue()
            }
        }
        guard let id, let childId, let amount, let createdAt else { throw fail("transaction without a required field") }
        return Wire.Transaction(id: id, householdId: householdId, childId: childId, amountCents: amount, note: note, source: source,
                                createdAt: createdAt, recordedAt: recordedAt, authorAccountId: author, reversesId: reversesId,
                                reversedById: reversedById, potId: potId)
    }

    /// A small object decoded with `JSONDecoder` (one per page).
    mutating func decoded<T: Decodable>(_ type: T.Type) throws(FeedSyntaxError) -> T {
        let start = i
        try skipValue()
        do { return try JSONDecoder().decode(type, from: Data(UnsafeBufferPointer(rebasing: b[start..<i]))) } catch {
            i = start
            throw fail("unreadable \(type)")
        }
    }

    // MARK: Values

    mutating func ws() {
        while i < b.count, b[i] == 32 || b[i] == 10 || b[i] == 13 || b[i] == 9 { i += 1 }
    }

    mutating func expect(_ c: UInt8, _ what: String) throws(FeedSyntaxError) {
        ws()
        guard i < b.count, b[i] == c else { throw fail("expected \(what)") }
        i += 1
    }

    /// Consumes the opening `{` or `[`.
    mutating func enter(_ c: UInt8, _ what: String) throws(FeedSyntaxError) {
        try expect(c, what)
    }

    /// The next key of an object entered with `enter`, the cursor on its value (which the
    /// caller must consume); nil after the closing `}`.
    mutating func nextKey(_ first: inout Bool) throws(FeedSyntaxError) -> Substring? {
        ws()
        guard i < b.count else { throw fail("unterminated object") }
        if b[i] == 125 { i += 1; return nil }
        if !first {
            guard b[i] == 44 else { throw fail("expected ',' or '}'") }
            i += 1
            ws()
        }
        first = false
        let key = try keyText()
        try expect(58, "':'")
        ws()
        return key
    }

    /// True with the cursor on the next element of an array entered with `enter` (which the
    /// caller must consume); false after the closing `]`.
    mutating func nextElement(_ first: inout Bool) throws(FeedSyntaxError) -> Bool {
        ws()
        guard i < b.count else { throw fail("unterminated array") }
        if b[i] == 93 { i += 1; return false }
        if !first {
            guard b[i] == 44 else { throw fail("expected ',' or ']'") }
            i += 1
            ws()
        }
        first = false
        return true
    }

    mutating func keyText() throws(FeedSyntaxError) -> Substring {
        Substring(try string())
    }

    /// A string; plain ones are made straight from the buffer, escaped ones go through the
    /// strict parser.
    mutating func string() throws(FeedSyntaxError) -> String {
        guard i < b.count, b[i] == 34 else { throw fail("expected a string") }
        let start = i + 1
        var j = start
        var plain = true
        while j < b.count, b[j] != 34 {
            if b[j] == 92 { plain = false; j += 2; continue }
            if b[j] < 0x20 { throw fail("control character in a string") }
            j += 1
        }
        guard j < b.count else { throw fail("unterminated string") }
        i = j + 1
        if plain { return String(decoding: UnsafeBufferPointer(rebasing: b[start..<j]), as: UTF8.self) }
        guard case .string(let s)? = try? JSONValue.parse(Array(UnsafeBufferPointer(rebasing: b[(start - 1)...j]))) else {
            i = start - 1
            throw fail("invalid string")
        }
        return s
    }

    mutating func isNull() -> Bool {
        guard i + 4 <= b.count, b[i] == 110, b[i + 1] == 117, b[i + 2] == 108, b[i + 3] == 108 else { return false }
        i += 4
        return true
    }

    mutating func optionalString() throws(FeedSyntaxError) -> String? {
        isNull() ? nil : try string()
    }

    mutating func int() throws(FeedSyntaxError) -> Int64 {
        var negative = false
        if i < b.count, b[i] == 45 { negative = true; i += 1 }
        let start = i
        var v: Int64 = 0
        while i < b.count, b[i] >= 48, b[i] <= 57 {
            let (m, o1) = v.multipliedReportingOverflow(by: 10)
            let (s, o2) = m.addingReportingOverflow(Int64(b[i] - 48))
            guard !o1, !o2 else { throw fail("integer out of range") }
            v = s
            i += 1
        }
        guard i > start else { throw fail("expected an integer") }
        if i < b.count, b[i] == 46 || b[i] == 101 || b[i] == 69 { throw fail("expected an integer") }
        return negative ? -v : v
    }

    mutating func optionalInt() throws(FeedSyntaxError) -> Int64? {
        isNull() ? nil : try int()
    }

    mutating func bool() throws(FeedSyntaxError) -> Bool {
        if i + 4 <= b.count, b[i] == 116, b[i + 1] == 114, b[i + 2] == 117, b[i + 3] == 101 { i += 4; return true }
        if i + 5 <= b.count, b[i] == 102, b[i + 1] == 97, b[i + 2] == 108, b[i + 3] == 115, b[i + 4] == 101 { i += 5; return false }
        throw fail("expected true or false")
    }

    /// Steps over one value of any kind, checking its syntax.
    mutating func skipValue() throws(FeedSyntaxError) {
        ws()
        guard i < b.count else { throw fail("unexpected end of input") }
        switch b[i] {
        case 123:
            var first = true
            try enter(123, "'{'")
            while try nextKey(&first) != nil { try skipValue() }
        case 91:
            var first = true
            try enter(91, "'['")
            while try nextElement(&first) { try skipValue() }
        case 34: _ = try string()
        case 116, 102: _ = try bool()
        case 110: guard isNull() else { throw fail("invalid literal") }
        case 45, 48...57:
            if b[i] == 45 { i += 1 }
            let start = i
            while i < b.count, (b[i] >= 48 && b[i] <= 57) || b[i] == 46 || b[i] == 101 || b[i] == 69 || b[i] == 43 || b[i] == 45 { i += 1 }
            guard i > start else { throw fail("invalid number") }
        default: throw fail("unexpected character")
        }
    }
}
