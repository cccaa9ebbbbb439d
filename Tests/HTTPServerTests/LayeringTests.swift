import Foundation
import XCTest

/// `HTTPServer` knows no application: neither it nor its tests import a ledger module (the
/// manifest lists none among its dependencies; this catches an import that would build only
/// because the module happens to be built already).
final class LayeringTests: XCTestCase {
    /// Modules of the application, besides any whose name starts with `Ledger`.
    static let applicationModules: Set<String> = ["SQLiteKit", "SQLiteServerKit", "PostgresKit", "StoreKitJWS"]

    func testHTTPServerImportsNoLedgerModule() throws {
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        var files = 0
        for folder in ["Sources/HTTPServer", "Tests/HTTPServerTests"] {
            let dir = repo.appendingPathComponent(folder)
            let names = (FileManager.default.enumerator(atPath: dir.path)?.allObjects as? [String] ?? [])
                .filter { $0.hasSuffix(".swift") }
            for name in names {
                files += 1
                let text = try String(contentsOf: dir.appendingPathComponent(name), encoding: .utf8)
                for (i, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    guard let module = Self.importedModule(line) else { continue }
                    XCTAssertFalse(module.hasPrefix("Ledger") || Self.applicationModules.contains(module),
                                   "\(folder)/\(name):\(i + 1) imports \(module)")
                }
            }
        }
        XCTAssertGreaterThan(files, 20, "no sources found under \(repo.path)")
    }

    func testImportedModule() {
        XCTAssertEqual(Self.importedModule("import Glibc"), "Glibc")
        XCTAssertEqual(Self.importedModule("  @testable import HTTPServer"), "HTTPServer")
        XCTAssertEqual(Self.importedModule("@_exported @preconcurrency import A.B"), "A")
        XCTAssertEqual(Self.importedModule("import struct Foo.Bar"), "Foo")
        XCTAssertNil(Self.importedModule("// import Foo"))
        XCTAssertNil(Self.importedModule("let important = 1"))
    }

    /// The module an `import` declaration on `line` names, nil when it is not one.
    static func importedModule(_ line: Substring) -> String? {
        var words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })[...]
        while let first = words.first, first.hasPrefix("@") { words = words.dropFirst() }
        guard words.first == "import" else { return nil }
        words = words.dropFirst()
        let kinds: Set<Substring> = ["typealias", "struct", "class", "enum", "protocol", "let", "var", "func"]
        if let kind = words.first, kinds.contains(kind) { words = words.dropFirst() }
        return words.first.map { String($0.prefix { $0 != "." }) }
    }

    static func importedModule(_ line: String) -> String? { importedModule(line[...]) }
}
