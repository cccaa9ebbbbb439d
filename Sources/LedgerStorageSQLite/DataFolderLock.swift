#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LedgerCore
import Synchronization

/// `serve` over SQLite holds an exclusive `flock` on `kidledger.lock` in its data folder
/// while it runs, so that a second server started on the same folder stops at once with a
/// clear message. Two servers on one database would each keep their own in-memory id index
/// (`TransactionKeys`) and could both accept the same transaction id. Admin commands
/// (`check`, `backup`, `accounts create`) do not take it: they run beside a server.
/// The kernel drops the lock when the process ends, however it ends.
final class DataFolderLock: Sendable {
    static let fileName = "kidledger.lock"

    private let descriptor: Mutex<Int32?>

    /// Takes the lock, or throws saying who holds it.
    init(directory: String) throws {
        let path = directory + "/" + Self.fileName
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw StorageFailure("cannot open \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(fd)
            if code == EWOULDBLOCK {
                throw StorageFailure("""
                    another kidledger-server is serving the data folder \(directory) (it holds \(path)): \
                    stop it first, or give this server a --data-dir of its own
                    """)
            }
            throw StorageFailure("cannot lock \(path): \(String(cString: strerror(code)))")
        }
        descriptor = Mutex(fd)
    }

    /// Lets the next server take the folder (at most once; later calls do nothing).
    func release() {
        descriptor.withLock { fd in
            guard let open = fd else { return }
            close(open)   // closing the only descriptor of the open file drops its lock
            fd = nil
        }
    }

    deinit { release() }
}
