import Foundation
import SQLiteKit
@testable import LedgerServer
@testable import LedgerStorageSQLite

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

/// The server's SQLite storage over the database at `path`, migrated: its id index, a
/// writer (stop it when done) and a read pool.
func openSQLiteStorage(_ path: String) throws -> (db: SQLiteConnection, writer: WriteQueue, storage: SQLiteLedgerStorage) {
    let db = try SQLiteConnection(path: path)
    try Migrator.migrate(db, Schema.migrations)
    let keys = try TransactionKeys.load(db)
    let writer = WriteQueue(connection: db, batchState: WriterRowState()) { _ in }
    return (db, writer, SQLiteLedgerStorage(reads: ReadPool(path: path), writer: writer, keys: keys))
}
