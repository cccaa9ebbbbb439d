import HTTPServer
import LedgerModel

/// One access-log JSON line, written straight into the log's buffer (this runs once per
/// request): no intermediate strings or arrays.
enum AccessLine {
    /// Appends the line for `e`, stamped `nowMs`, with its newline.
    static func write(_ e: AccessLogEntry, route: String, nowMs: Int64, into out: inout [UInt8]) {
        // The fixed text, the timestamp and four numbers take less than 256 bytes. The
        // strings' worst case when that fits on the stack, else their tight bounds: a scan
        // of each, which also tells whether it needs an escape, so it is not scanned again.
        var strings = ByteWriter.jsonStringBound(e.method.utf8.count) + ByteWriter.jsonStringBound(e.path.utf8.count)
            + ByteWriter.jsonStringBound(route.utf8.count) + ByteWriter.jsonStringBound(e.remoteAddress.utf8.count)
        var plain: (method: Bool, path: Bool, route: Bool, remote: Bool)?
        if 256 + strings > [UInt8].appendWritingStackLimit {
            let bounds = (ByteWriter.jsonStringBound(e.method), ByteWriter.jsonStringBound(e.path),
                          ByteWriter.jsonStringBound(route), ByteWriter.jsonStringBound(e.remoteAddress))
            strings = bounds.0 + bounds.1 + bounds.2 + bounds.3
            plain = (bounds.0 == e.method.utf8.count + 2, bounds.1 == e.path.utf8.count + 2,
                     bounds.2 == route.utf8.count + 2, bounds.3 == e.remoteAddress.utf8.count + 2)
        }
        out.appendWriting(maxCount: 256 + strings) { w in
            func put(_ s: String, _ isPlain: Bool?) {
                if let isPlain { w.putJSONString(s, plain: isPlain) } else { w.putJSONString(s) }
            }
            w.put(literal: #"{"ts":""#)
            w.putTimestamp(ms: nowMs)
            w.put(literal: #"","event":"request","method":"#)
            put(e.method, plain?.method)
            w.put(literal: #","path":"#)
            put(e.path, plain?.path)
            w.put(literal: #","route":"#)
            put(route, plain?.route)
            w.put(literal: #","status":"#)
            w.putDecimal(Int64(e.status))
            w.put(literal: #","bytes":"#)
            w.putDecimal(Int64(e.bytes))
            w.put(literal: #","durationMs":"#)
            // Milliseconds with three decimals, from the duration rounded to a microsecond.
            let micros = Int64((e.duration * 1_000_000).rounded())
            w.putDecimal(micros / 1000)
            w.put(46)
            let frac = micros % 1000
            if frac < 100 { w.put(48) }
            if frac < 10 { w.put(48) }
            w.putDecimal(frac)
            w.put(literal: #","remote":"#)
            put(e.remoteAddress, plain?.remote)
            w.put(literal: "}\n")
        }
    }

    /// Appends the line for `e`, stamped now, to the log's buffer.
    static func log(_ e: AccessLogEntry, route: String, to logger: Logger) {
        let now = Timestamp.nowMs()
        logger.appendLine { write(e, route: route, nowMs: now, into: &$0) }
    }
}
