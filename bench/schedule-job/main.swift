// The schedule payment job's catch-up: N schedules (default 20,000), 100 to a household,
// that all fall due in the same minute (00:00 in Europe/Zurich), paid by one run of the job
// over a fresh SQLite database in a temporary folder (or PostgreSQL: KIDLEDGER_DATABASE_URL).
// Prints the process's CPU time for the run — every thread: the job, the writer, the
// completions — and its wall time; over PostgreSQL also the CPU of the cluster's processes
// (the postmaster named by KIDLEDGER_BENCH_PG_PID and its children: the backends serving
// this process, the WAL writer, the checkpointer), read from /proc/<pid>/stat. Run by
// bench/schedule-job.sh.
import Foundation
import LedgerCore
import LedgerModel
import LedgerServer
import Synchronization

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// CPU seconds (user + system) of the postmaster `pid` and every process whose parent it is.
func clusterCPUSeconds(_ pid: Int32) -> Double {
    let tick = Double(sysconf(Int32(_SC_CLK_TCK)))
    var total = 0.0
    for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
        guard let p = Int32(entry), let stat = try? String(contentsOfFile: "/proc/\(p)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { continue }
        // After "pid (comm) ": state, ppid, …; utime and stime are fields 14 and 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let ppid = Int32(fields[1]), p == pid || ppid == pid,
              let user = Double(fields[11]), let system = Double(fields[12]) else { continue }
        total += (user + system) / tick
    }
    return total
}
let postmaster = ProcessInfo.processInfo.environment["KIDLEDGER_BENCH_PG_PID"].flatMap { Int32($0) }

let n = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 20_000
let perHousehold = 100
let folder = FileManager.default.temporaryDirectory.appendingPathComponent("schedule-job-bench-\(UUID().uuidString)").path
defer { try? FileManager.default.removeItem(atPath: folder) }
let now = Mutex(Timestamp.parse("2027-01-04T12:00:00Z")!)
var configuration = LedgerAppConfiguration(dataDirectory: folder, host: "127.0.0.1", port: 0)
configuration.logging = false
configuration.scheduleJobInterval = 0
configuration.clock = { now.withLock { $0 } }
configuration.databaseURL = ProcessInfo.processInfo.environment["KIDLEDGER_DATABASE_URL"].flatMap { $0.isEmpty ? nil : $0 }
let app = try LedgerApp(configuration: configuration)
// KIDLEDGER_BENCH_PER_WRITE, KIDLEDGER_BENCH_PER_WRITE_BESIDE, KIDLEDGER_BENCH_SHARE: the job's
// pacing (ScheduleJob.Pacing: perWrite, perWriteBesideRequests, share).
let environment = ProcessInfo.processInfo.environment
if let v = environment["KIDLEDGER_BENCH_PER_WRITE"].flatMap(Int.init) { app.scheduleJob.pacing.perWrite = v }
if let v = environment["KIDLEDGER_BENCH_PER_WRITE_BESIDE"].flatMap(Int.init) { app.scheduleJob.pacing.perWriteBesideRequests = v }
if let v = environment["KIDLEDGER_BENCH_SHARE"].flatMap(Double.init) { app.scheduleJob.pacing.share = v }
try app.start()
let storage = app.storage
let created = now.withLock { $0 }
let (account, token) = try storage.writeAndWait { w in
    let (a, t) = try w.createAccount(handle: "bench-" + UUID().lowercased.prefix(8), displayName: "Bench", deviceName: "bench", now: created)
    return (a.id, t.secret)
}
let terms = ScheduleTerms(firstDate: LocalDate("2027-01-05")!, cadence: .weekly,
                          timeZone: try ScheduleTimeZone(identifier: "Europe/Zurich"))
for _ in 0..<(n + perHousehold - 1) / perHousehold {
    try storage.writeAndWait { w in
        let h = UUID().lowercased, kid = UUID().lowercased
        _ = try w.createHousehold(id: h, name: "Bench", currency: "EUR", owner: account, ifAbsentOnly: true, now: created)
        _ = try w.createChild(household: h, account: account, id: kid, name: "Kid", sortOrder: nil, now: created)
        for _ in 0..<perHousehold {
            _ = try w.createSchedule(household: h, account: account,
                                     ScheduleDraft(id: UUID().lowercased, childId: kid, kind: .allowance, amountCents: 500,
                                                   rateBasisPoints: 0, note: "", terms: terms), now: created)
        }
    }
}

if CommandLine.arguments.contains("--serve") {
    // Serves HTTP on a loopback port with the schedules in place, for a load beside the
    // job (bench/schedule-job-writes.py): prints `ready PORT HOUSEHOLD CHILD TOKEN` (a
    // household of its own for the writes), then answers lines on stdin:
    //   job due | job none   runs the job a minute after the schedules' midnight (all due),
    //                        or at the seeding's time (nothing due); prints
    //                        `job PAYMENTS CPU WALL` (this process's CPU during the run)
    //   cpu                  prints `cpu PROCESS CLUSTER` (CPU seconds so far; the cluster's
    //                        0 without KIDLEDGER_BENCH_PG_PID)
    //   quit
    let (h, kid) = (UUID().lowercased, UUID().lowercased)
    try storage.writeAndWait { w in
        _ = try w.createHousehold(id: h, name: "Writes", currency: "EUR", owner: account, ifAbsentOnly: true, now: created)
        _ = try w.createChild(household: h, account: account, id: kid, name: "Kid", sortOrder: nil, now: created)
    }
    func say(_ line: String) { FileHandle.standardOutput.write((line + "\n").data(using: .utf8)!) }
    say("ready \(app.port) \(h) \(kid) \(token)")
    while let line = readLine() {
        let words = line.split(separator: " ")
        switch words.first {
        case "job":
            if words.dropFirst().first == "due" { now.withLock { $0 = Timestamp.parse("2027-01-04T23:01:00Z")! } }
            let cpu = cpuSeconds(), wall = Date()
            let report = app.scheduleJob.run()
            say(String(format: "job %d %.3f %.3f", report.payments, cpuSeconds() - cpu, Date().timeIntervalSince(wall)))
        case "cpu":
            say(String(format: "cpu %.3f %.3f", cpuSeconds(), postmaster.map(clusterCPUSeconds) ?? 0))
        default:
            app.stop()
            exit(0)
        }
    }
    app.stop()
    exit(0)
}

// A minute after midnight in Zurich: every schedule is due.
now.withLock { $0 = Timestamp.parse("2027-01-04T23:01:00Z")! }
// The seeding's writes were requests' writes to the writer: over SQLite the job would pay
// in its smaller writes for `Pacing.requestsRecently` (writes sized to requests' traffic).
// This run measures the catch-up of a server with no requests' writes in flight.
Thread.sleep(forTimeInterval: app.scheduleJob.pacing.requestsRecently + 0.1)
// KIDLEDGER_BENCH_SIGNAL=1: says on stderr when the run starts (a profiler may attach then).
if ProcessInfo.processInfo.environment["KIDLEDGER_BENCH_SIGNAL"] == "1" {
    FileHandle.standardError.write("schedule-job: run starts\n".data(using: .utf8)!)
    Thread.sleep(forTimeInterval: 0.5)
}
let cpu = cpuSeconds(), pgCPU = postmaster.map(clusterCPUSeconds), wall = Date()
let report = app.scheduleJob.run()
let cpuUsed = cpuSeconds() - cpu, wallUsed = Date().timeIntervalSince(wall)
let pgUsed = postmaster.map(clusterCPUSeconds).map { $0 - (pgCPU ?? 0) }
let again = app.scheduleJob.run()
app.stop()
print(String(format: "schedule-job: %d schedules due, %d paid (%d failed; a second run paid %d); CPU %.3f s (%.1f µs each), wall %.3f s, %@",
             report.schedules, report.payments, report.failed, again.payments, cpuUsed,
             cpuUsed * 1e6 / Double(max(1, report.payments)), wallUsed, configuration.databaseURL == nil ? "SQLite" : "PostgreSQL"))
if let pgUsed {
    print(String(format: "schedule-job: PostgreSQL's processes %.3f s of CPU; server + PostgreSQL %.3f s (%.1f µs each)",
                 pgUsed, cpuUsed + pgUsed, (cpuUsed + pgUsed) * 1e6 / Double(max(1, report.payments))))
}
