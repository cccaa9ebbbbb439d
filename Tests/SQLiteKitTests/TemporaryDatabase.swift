import Foundation

/// A database path in a new temporary directory of its own.
func temporaryDatabasePath(_ prefix: String = "sqlitekit") -> String {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    return dir.appendingPathComponent("db.sqlite").path
}
