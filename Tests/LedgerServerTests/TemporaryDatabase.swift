import Foundation
@testable import LedgerServer

/// Runs `body` with the path of a database file in a new temporary directory, removed afterwards.
func withTemporaryDatabase(_ prefix: String, _ body: (String) throws -> Void) throws {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-\(prefix)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    try body(dir.appendingPathComponent("db.sqlite").path)
}

/// Runs `body` with the configuration of a new temporary data directory (port 0), removed afterwards.
func withTemporaryDataDirectory(_ prefix: String, _ body: (LedgerAppConfiguration) throws -> Void) throws {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-\(prefix)-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    try body(LedgerAppConfiguration(dataDirectory: dir, port: 0))
}
