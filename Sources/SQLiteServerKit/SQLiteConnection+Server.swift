import CSQLite
import SQLiteKit
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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

    /// Defers this connection's commit syncs of its WAL to the caller (a connection opened
    /// by `coalescingWALWriter`): COMMIT writes the frames to the file and returns without
    /// waiting for the disk; the commit is visible to other connections at once but durable
    /// only after the returned object's `sync()`. Until then nothing may be acknowledged,
    /// and a reader that saw the commit must not answer either. Checkpoints (this
    /// connection's too) and the WAL header written when the log starts over are still
    /// synced by SQLite itself (`checkpoint_fullfsync` marks their syncs as FULL).
    public func deferWALCommitSyncs() throws -> DeferredWALSync {
        try execute("PRAGMA checkpoint_fullfsync = ON")
        // The WAL file is opened with the first read; it stays open as long as this connection.
        _ = try queryOne("SELECT count(*) FROM sqlite_schema")
        guard let buffer = walBuffer else {
            throw SQLiteError(code: SQLITE_ERROR, message: "commit syncs are deferred only on a coalescing WAL writer")
        }
        guard let name = sqlite3_filename_wal(sqlite3_db_filename(handle, "main")) else {
            throw SQLiteError(code: SQLITE_ERROR, message: "the database has no WAL file name")
        }
        let sync = try DeferredWALSync(path: String(cString: name))
        buffer.defersCommitSyncs = true
        return sync
    }

    /// Commit syncs deferred (`deferWALCommitSyncs`) and syncs made on this connection's
    /// WAL so far; nil when its WAL is not written through `CoalescingWALVFS` (or not open).
    package var walSyncCounts: (deferred: Int, synced: Int)? {
        walBuffer.map { ($0.deferredSyncs, $0.syncs) }
    }

    private var walBuffer: CoalescingWALVFS.Buffer? {
        var file: UnsafeMutablePointer<sqlite3_file>?
        guard sqlite3_file_control(handle, "main", SQLITE_FCNTL_JOURNAL_POINTER, &file) == SQLITE_OK,
              let file, file.pointee.pMethods != nil else { return nil }
        return CoalescingWALVFS.walBuffer(file)
    }
}

/// Makes a WAL's written frames durable: `fdatasync` through a descriptor of its own (a
/// sync flushes the file, whichever descriptor wrote it). Safe to call from another thread
/// while the writer goes on writing: what was written before the call is durable when it
/// returns.
public final class DeferredWALSync: Sendable {
    public let path: String
    private let fd: Int32

    init(path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw SQLiteError(code: SQLITE_CANTOPEN, message: "cannot open \(path) to sync it: errno \(errno)")
        }
        self.path = path
        self.fd = fd
    }

    deinit { close(fd) }

    /// Blocks until every byte written to the WAL before the call is on the disk. Throws
    /// when the system reports a failure: what the file holds is then unknown (the kernel
    /// may have dropped the pages it could not write), and syncing again would not say.
    public func sync() throws {
        #if canImport(Darwin)
        let rc = fcntl(fd, F_FULLFSYNC)
        #else
        let rc = fdatasync(fd)
        #endif
        guard rc == 0 else {
            throw SQLiteError(code: SQLITE_IOERR | (4 << 8), message: "fdatasync of \(path) failed: errno \(errno)")
        }
    }
}
