import Foundation
import Glibc
import HTTPServer
import LedgerModel
import Synchronization
import SystemKit

/// JSON-lines logging to standard output, one object per line. Lines are buffered and
/// written at least every 100 ms (or when 64 KiB are waiting), so logging costs no system
/// call per request; `flush()` writes what is waiting.
final class Logger: Sendable {
    /// Which lines are written: `debug` and `info` include one access line per request.
    enum Level: String, Sendable, CaseIterable { case debug, info, warning, error, none }

    private let buffer = Mutex<[UInt8]>([])
    let level: Level
    var enabled: Bool { level != .none }
    /// Whether per-request access lines are written.
    var accessLines: Bool { level == .debug || level == .info }

    init(level: Level = .info) {
        self.level = level
        if level != .none {
            let t = Thread { [weak self] in
                nameCurrentThread("kl-log")
                while let self {
                    Thread.sleep(forTimeInterval: 0.1)
                    self.flush()
                }
            }
            t.start()
        }
    }

    func log(_ object: JSONObject) {
        guard enabled else { return }
        var o: JSONObject = ["ts": .string(Timestamp.format(ms: Timestamp.nowMs()))]
        for (k, v) in object.pairs { o[k] = v }
        var line = JSONValue.object(o).serialized()
        line.append(10)
        append(line, flushNow: object["event"] != .string("request"))
    }

    /// Appends a prepared line (with its newline).
    func append(_ line: [UInt8], flushNow: Bool = false) {
        let full = buffer.withLock { b -> Bool in
            b.append(contentsOf: line)
            return b.count >= 64 * 1024
        }
        if full || flushNow { flush() }
    }

    /// Appends a line that `write` puts straight into the buffer (with its newline), so
    /// a per-request line needs no array of its own.
    func appendLine(_ write: (inout [UInt8]) -> Void) {
        let full = buffer.withLock { b -> Bool in
            write(&b)
            return b.count >= 64 * 1024
        }
        if full { flush() }
    }

    func flush() {
        let data = buffer.withLock { b -> [UInt8] in
            let d = b
            b.removeAll(keepingCapacity: true)
            return d
        }
        guard !data.isEmpty else { return }
        data.withUnsafeBufferPointer { buf in
            var off = 0
            while off < buf.count {
                let n = Glibc.write(1, buf.baseAddress! + off, buf.count - off)
                if n <= 0 { if n < 0 && errno == EINTR { continue }; break }
                off += n
            }
        }
    }
}
