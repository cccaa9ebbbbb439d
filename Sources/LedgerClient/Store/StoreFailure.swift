import SQLiteKit

/// A local storage failure (SQLite busy past its timeout, a full disk, an I/O error) during a
/// sync or a flow. Never a server problem: the sync status is left as it was.
struct StoreFailure: Error, CustomStringConvertible {
    /// The SQLite (or file) error underneath.
    let underlying: any Error

    var description: String { "the device's storage failed: \(underlying)" }

    /// Runs `body`, turning a SQLite error into a `StoreFailure` (other errors pass unchanged).
    static func mapping<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as SQLiteError { throw StoreFailure(underlying: error) }
    }
}
