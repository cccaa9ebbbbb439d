import CSQLite
import SQLiteKit

/// Storage features only the server uses: they stay out of the device SDK's dependencies.
extension SQLiteConnection {
    /// Opens `path` read-write in WAL mode with `synchronous=FULL`, its WAL written through
    /// `CoalescingWALVFS` (a commit's frames reach the file in one write). Only that
    /// combination is safe: with `synchronous=NORMAL` other connections could see frames
    /// still in the buffer. `newFilePageSize`: the page size of a database created by this
    /// opening (an existing one keeps its own).
    public static func coalescingWALWriter(path: String, busyTimeoutMs: Int32 = 5000,
                                           newFilePageSize: Int? = nil) throws -> SQLiteConnection {
        guard let name = CoalescingWALVFS.registeredName else {
            throw SQLiteError(code: SQLITE_ERROR, message: "cannot register the coalescing WAL VFS")
        }
        return try SQLiteConnection(path: path, mode: .readWrite, busyTimeoutMs: busyTimeoutMs,
                                    walMode: true, synchronousFull: true, vfs: name, newFilePageSize: newFilePageSize)
    }

    /// fsyncs the main database file through this connection's own file handle (the VFS's
    /// sync, so other connections' locks and buffers are untouched).
    public func syncDatabaseFile() throws {
        var file: UnsafeMutablePointer<sqlite3_file>?
        let rc = sqlite3_file_control(handle, "main", SQLITE_FCNTL_FILE_POINTER, &file)
        guard rc == SQLITE_OK, let file, let methods = file.pointee.pMethods, let sync = methods.pointee.xSync else {
            throw SQLiteError(code: rc == SQLITE_OK ? SQLITE_ERROR : rc, message: "no database file to sync")
        }
        let src = sync(file, SQLITE_SYNC_NORMAL)
        guard src == SQLITE_OK else { throw SQLiteError(code: src, message: "database file sync failed") }
    }
}
