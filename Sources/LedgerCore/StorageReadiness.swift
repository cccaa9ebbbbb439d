/// Whether storage can serve now (`/readyz`).
package enum StorageReadiness: Sendable, Equatable {
    case ready
    /// Writes fail for lack of disk space, until a write goes through again.
    case outOfSpace
    /// The database does not answer. `transient`: it may shortly by itself (a database
    /// server restarting, a network in between), unlike a local file that cannot be read.
    case notAnswering(transient: Bool)
    /// Commits made through other server processes are not being received.
    case changesNotHeard
}
