import Foundation
import XCTest

/// Each server layer imports only what docs/architecture.md allows. The targets' dependencies
/// keep most of it, but a module a dependency brings along may be imported too: this keeps
/// SQL kits out of the handlers and HTTP out of storage.
final class LayeringTests: XCTestCase {
    private static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources")

    /// The modules the Swift files of `target` import.
    private func imports(of target: String) throws -> Set<String> {
        let folder = Self.sources.appendingPathComponent(target)
        var found = Set<String>()
        let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL } ?? []
        for file in files where file.pathExtension == "swift" {
            for line in try String(contentsOf: file, encoding: .utf8).split(separator: "\n") {
                let words = line.split(separator: " ")
                if let i = words.firstIndex(of: "import"), words[..<i].allSatisfy({ $0.hasPrefix("@") }), i + 1 < words.count {
                    found.insert(String(words[i + 1]))
                }
            }
        }
        XCTAssertFalse(files.isEmpty, "no sources for \(target)")
        return found
    }

    private let system: Set<String> = ["Foundation", "Dispatch", "Synchronization", "Glibc", "Darwin"]

    func testLedgerCoreKnowsNoHTTPAndNoSQL() throws {
        XCTAssertEqual(try imports(of: "LedgerCore").subtracting(system), ["LedgerModel", "COpenSSL", "StoreKitJWS"])
    }

    func testEachBackendImportsLedgerCoreAndItsKitOnly() throws {
        XCTAssertEqual(try imports(of: "LedgerStorageSQLite").subtracting(system),
                       ["LedgerCore", "LedgerModel", "SQLiteKit", "SQLiteServerKit", "SystemKit"])
        XCTAssertEqual(try imports(of: "LedgerStoragePostgres").subtracting(system),
                       ["LedgerCore", "LedgerModel", "PostgresKit", "SystemKit"])
    }

    func testTheServerNamesNoDatabaseKit() throws {
        let server = try imports(of: "LedgerServer")
        XCTAssertTrue(server.isDisjoint(with: ["SQLiteKit", "SQLiteServerKit", "PostgresKit", "CSQLite", "CLibPQ"]), "\(server)")
    }
}
