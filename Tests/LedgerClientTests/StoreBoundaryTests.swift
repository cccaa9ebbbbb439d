import Foundation
import XCTest

/// Only `Sources/LedgerClient/Store/` touches the replica's database: everything else calls the
/// store's intention-named methods. A cheap source scan keeps it that way.
final class StoreBoundaryTests: XCTestCase {
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources/LedgerClient")

    /// What reaches the database: the SQLite layer, the store's handle, SQL text.
    static let forbidden: [(what: String, pattern: String)] = [
        ("imports the SQLite layer", #"^\s*(@\w+\s+)*import\s+SQLiteKit\b"#),
        ("names a SQLite type", #"\bSQLite(Connection|Statement|Row|Value|Binder|Error)\b"#),
        ("uses the store's database handle", #"\.db\b|\bdb\."#),
        ("holds SQL", #"(^|")\s*(SELECT|INSERT|UPDATE|DELETE FROM|REPLACE INTO|PRAGMA|BEGIN|COMMIT|ROLLBACK|SAVEPOINT|CREATE|DROP|ALTER)\s"#),
    ]

    /// The lines of `files` that reach the database, as "path:line: what".
    static func violations(in files: [URL]) throws -> [String] {
        let rules = try forbidden.map { ($0.what, try NSRegularExpression(pattern: $0.pattern)) }
        var found: [String] = []
        for file in files {
            let lines = try String(contentsOf: file, encoding: .utf8).components(separatedBy: "\n")
            for (number, line) in lines.enumerated() {
                if line.trimmingCharacters(in: .whitespaces).hasPrefix("//") { continue }
                let range = NSRange(line.startIndex..., in: line)
                for (what, rule) in rules where rule.firstMatch(in: line, range: range) != nil {
                    found.append("\(file.path.dropFirst(sources.path.count + 1)):\(number + 1): \(what)")
                }
            }
        }
        return found
    }

    static func swiftFiles(insideStore: Bool) throws -> [URL] {
        let all = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)!
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
        return all.filter { $0.path.hasPrefix(sources.appendingPathComponent("Store").path + "/") == insideStore }
    }

    func testOnlyTheStoreTouchesTheDatabase() throws {
        let outside = try Self.swiftFiles(insideStore: false)
        XCTAssertGreaterThan(outside.count, 20, "the sources were found")
        XCTAssertEqual(try Self.violations(in: outside), [])
    }

    func testTheScanFindsTheStoresOwnSQL() throws {
        let found = try Self.violations(in: try Self.swiftFiles(insideStore: true))
        for what in Self.forbidden.map(\.what) {
            XCTAssertTrue(found.contains { $0.hasSuffix(what) }, "nothing in Store/ \(what): the rule matches nothing")
        }
    }
}
