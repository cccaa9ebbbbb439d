import HTTPServer
import LedgerModel

/// One access-log JSON line, built straight into bytes (this runs once per request).
enum AccessLine {
    static func render(_ e: AccessLogEntry, route: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(200)
        out += #"{"ts":"#.utf8
        JSONValue.writeString(Timestamp.format(ms: Timestamp.nowMs()), into: &out)
        out += #","event":"request","method":"#.utf8
        JSONValue.writeString(e.method, into: &out)
        out += #","path":"#.utf8
        JSONValue.writeString(e.path, into: &out)
        out += #","route":"#.utf8
        JSONValue.writeString(route, into: &out)
        out += #","status":"#.utf8
        out += String(e.status).utf8
        out += #","bytes":"#.utf8
        out += String(e.bytes).utf8
        out += #","durationMs":"#.utf8
        let micros = Int64((e.duration * 1_000_000).rounded())
        out += String(micros / 1000).utf8
        out.append(46)
        let frac = micros % 1000
        out += (frac < 10 ? "00" : frac < 100 ? "0" : "").utf8
        out += String(frac).utf8
        out += #","remote":"#.utf8
        JSONValue.writeString(e.remoteAddress, into: &out)
        out += "}\n".utf8
        return out
    }
}
