import Foundation

/// Runs `body` with the path of a database file in a new temporary directory, removed afterwards.
func withTemporaryDatabase(_ prefix: String, _ body: (String) throws -> Void) throws {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-\(prefix)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    try body(dir.appendingPathComponent("db.sqlite").path)
}
