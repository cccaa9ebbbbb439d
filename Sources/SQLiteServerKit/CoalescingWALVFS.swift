import CSQLite
import SQLiteKit
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A VFS that is the default one except for write-ahead logs: writes to a WAL that follow
/// each other in the file are gathered in memory and reach the file as one `pwrite` just
/// before anything that needs them there — a sync, a read or rewrite elsewhere in the
/// file, a truncation, a size query, a file control or the close.
///
/// SQLite writes a commit as two writes per page (a 24-byte frame header, then the page),
/// so a group commit of a few hundred frames was a few hundred system calls. With this VFS
/// it is one, followed by the same fsync as before.
///
/// Only for connections with `synchronous=FULL` (or EXTRA): SQLite then syncs the WAL at
/// every commit before it publishes the new frames to other connections in the WAL index,
/// and the sync writes the gathered bytes first. Other connections therefore never see a
/// frame that is still in this buffer; with NORMAL they could. `SQLiteConnection` refuses
/// the combination.
enum CoalescingWALVFS {
    static let name = "kidledger-coalescing-wal"

    /// Bytes gathered before they are written without waiting for a sync.
    static let capacity = 4 << 20

    /// The largest write the default unix VFS passes to `pwrite` in one piece (it masks the
    /// length to 17 bits), rounded down to whole 4 KiB.
    static let maxWrite = 0x1F000

    /// Registers the VFS once (not as the default); returns its name for `sqlite3_open_v2`.
    static let registeredName: String? = {
        // sqlite3_vfs_find initialises SQLite: the process settings go first.
        SQLiteConnection.applyProcessSettings()
        guard let base = sqlite3_vfs_find(nil) else { return nil }
        let vfs = UnsafeMutablePointer<sqlite3_vfs>.allocate(capacity: 1)
        vfs.initialize(to: base.pointee)
        vfs.pointee.pNext = nil
        vfs.pointee.szOsFile = base.pointee.szOsFile + Int32(headerSize)
        vfs.pointee.zName = UnsafePointer(strdup(name))
        vfs.pointee.pAppData = UnsafeMutableRawPointer(base)
        vfs.pointee.xOpen = { vfs, zName, file, flags, outFlags in
            let base = vfs!.pointee.pAppData!.assumingMemoryBound(to: sqlite3_vfs.self)
            guard flags & SQLITE_OPEN_WAL != 0 else {
                // Anything else is the default VFS's own file, in the same memory.
                return base.pointee.xOpen(base, zName, file, flags, outFlags)
            }
            let inner = innerFile(file!)
            let rc = base.pointee.xOpen(base, zName, inner, flags, outFlags)
            guard rc == SQLITE_OK else {
                if inner.pointee.pMethods != nil { _ = inner.pointee.pMethods.pointee.xClose(inner) }
                file!.pointee.pMethods = nil
                return rc
            }
            let buffer = Buffer()
            stateSlot(file!).pointee = Unmanaged.passRetained(buffer).toOpaque()
            file!.pointee.pMethods = UnsafePointer(walMethods)
            return SQLITE_OK
        }
        guard sqlite3_vfs_register(vfs, 0) == SQLITE_OK else { return nil }
        return name
    }()

    /// Our part of a WAL file object: the methods pointer, then the buffer; the default
    /// VFS's file object follows.
    private static let headerSize = 2 * MemoryLayout<UnsafeRawPointer>.stride

    private static func stateSlot(_ file: UnsafeMutablePointer<sqlite3_file>) -> UnsafeMutablePointer<UnsafeMutableRawPointer?> {
        (UnsafeMutableRawPointer(file) + MemoryLayout<UnsafeRawPointer>.stride).assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
    }

    private static func innerFile(_ file: UnsafeMutablePointer<sqlite3_file>) -> UnsafeMutablePointer<sqlite3_file> {
        (UnsafeMutableRawPointer(file) + headerSize).assumingMemoryBound(to: sqlite3_file.self)
    }

    private static func buffer(_ file: UnsafeMutablePointer<sqlite3_file>?) -> Buffer {
        Unmanaged<Buffer>.fromOpaque(stateSlot(file!).pointee!).takeUnretainedValue()
    }

    private static func inner(_ file: UnsafeMutablePointer<sqlite3_file>?) -> (UnsafeMutablePointer<sqlite3_file>, sqlite3_io_methods) {
        let f = innerFile(file!)
        return (f, f.pointee.pMethods.pointee)
    }

    /// Writes out what is gathered; SQLITE_OK when nothing was.
    private static func flush(_ file: UnsafeMutablePointer<sqlite3_file>?) -> Int32 {
        let b = buffer(file)
        guard b.count > 0 else { return SQLITE_OK }
        let (f, m) = inner(file)
        var done = 0
        var rc = SQLITE_OK
        while done < b.count, rc == SQLITE_OK {
            let n = min(b.count - done, maxWrite)
            rc = m.xWrite(f, b.bytes + done, Int32(n), b.start + Int64(done))
            done += n
        }
        b.count = 0
        return rc
    }

    /// Calls the default VFS's method through `call`, after writing out what is gathered
    /// when `flushFirst` (and not when that failed).
    private static func forward(_ file: UnsafeMutablePointer<sqlite3_file>?, flushFirst: Bool,
                                _ call: (UnsafeMutablePointer<sqlite3_file>, sqlite3_io_methods) -> Int32) -> Int32 {
        if flushFirst {
            let rc = flush(file)
            if rc != SQLITE_OK { return rc }
        }
        let (f, methods) = inner(file)
        return call(f, methods)
    }

    /// The contiguous bytes not yet written: `count` bytes for file offset `start`.
    private final class Buffer {
        let bytes = UnsafeMutableRawPointer.allocate(byteCount: CoalescingWALVFS.capacity, alignment: 4096)
        var start: Int64 = 0
        var count = 0
        deinit { bytes.deallocate() }

        func overlaps(_ offset: Int64, _ length: Int) -> Bool {
            count > 0 && offset < start + Int64(count) && start < offset + Int64(length)
        }
    }

    private nonisolated(unsafe) static let walMethods: UnsafeMutablePointer<sqlite3_io_methods> = {
        let m = UnsafeMutablePointer<sqlite3_io_methods>.allocate(capacity: 1)
        m.initialize(to: sqlite3_io_methods())
        m.pointee.iVersion = 1
        m.pointee.xClose = { file in
            let rc = flush(file)
            let (f, methods) = inner(file)
            let closed = methods.xClose(f)
            Unmanaged<Buffer>.fromOpaque(stateSlot(file!).pointee!).release()
            stateSlot(file!).pointee = nil
            return rc != SQLITE_OK ? rc : closed
        }
        m.pointee.xRead = { file, out, amount, offset in
            forward(file, flushFirst: buffer(file).overlaps(offset, Int(amount))) { $1.xRead($0, out, amount, offset) }
        }
        m.pointee.xWrite = { file, data, amount, offset in
            let b = buffer(file)
            let n = Int(amount)
            if b.count > 0 {
                let end = b.start + Int64(b.count)
                if offset == end, b.count + n <= capacity {
                    (b.bytes + b.count).copyMemory(from: data!, byteCount: n)
                    b.count += n
                    return SQLITE_OK
                }
                if offset >= b.start, offset + Int64(n) <= end {
                    (b.bytes + Int(offset - b.start)).copyMemory(from: data!, byteCount: n)
                    return SQLITE_OK
                }
                let rc = flush(file)
                if rc != SQLITE_OK { return rc }
            }
            if n <= capacity {
                b.start = offset
                b.bytes.copyMemory(from: data!, byteCount: n)
                b.count = n
                return SQLITE_OK
            }
            let (f, methods) = inner(file)
            return methods.xWrite(f, data, amount, offset)
        }
        m.pointee.xTruncate = { file, size in forward(file, flushFirst: true) { $1.xTruncate($0, size) } }
        m.pointee.xSync = { file, flags in forward(file, flushFirst: true) { $1.xSync($0, flags) } }
        m.pointee.xFileSize = { file, size in forward(file, flushFirst: true) { $1.xFileSize($0, size) } }
        m.pointee.xLock = { file, level in forward(file, flushFirst: false) { $1.xLock($0, level) } }
        m.pointee.xUnlock = { file, level in forward(file, flushFirst: false) { $1.xUnlock($0, level) } }
        m.pointee.xCheckReservedLock = { file, out in forward(file, flushFirst: false) { $1.xCheckReservedLock($0, out) } }
        m.pointee.xFileControl = { file, op, arg in forward(file, flushFirst: true) { $1.xFileControl($0, op, arg) } }
        m.pointee.xSectorSize = { file in forward(file, flushFirst: false) { $1.xSectorSize($0) } }
        m.pointee.xDeviceCharacteristics = { file in forward(file, flushFirst: false) { $1.xDeviceCharacteristics($0) } }
        return m
    }()
}
