import Foundation
import Glibc
import LedgerModel
import Synchronization

/// JSON-lines logging to standard output, one object per line.
final class Logger: Sendable {
    private let lock = Mutex(())
    let enabled: Bool

    init(enabled: Bool = true) { self.enabled = enabled }

    func log(_ object: JSONObject) {
        guard enabled else { return }
        var o: JSONObject = ["ts": .string(Timestamp.format(ms: Timestamp.nowMs()))]
        for (k, v) in object.pairs { o[k] = v }
        var line = JSONValue.object(o).serialized()
        line.append(10)
        lock.withLock { _ in
            line.withUnsafeBufferPointer { buf in
                var off = 0
                while off < buf.count {
                    let n = Glibc.write(1, buf.baseAddress! + off, buf.count - off)
                    if n <= 0 { if n < 0 && errno == EINTR { continue }; break }
                    off += n
                }
            }
        }
    }
}
