import Foundation
import SystemKit
import SQLiteKit
import SQLiteServerKit
import Synchronization

/// Copies committed WAL frames into the database file on a thread and connection of its
/// own, so the writer's COMMIT does not wait for a checkpoint (the random writes into the
/// database file and its fsync). The writer runs with `wal_autocheckpoint = 0` and tells
/// this object after each commit; this thread then runs a PASSIVE checkpoint, which blocks
/// neither the writer nor readers, at most every `interval` seconds while commits keep
/// coming. Under continuous writes the log never finds itself fully copied and so never
/// starts over: once it holds more than `restartFrames` frames this object asks the writer
/// (`restartRequested`) to run a RESTART checkpoint between two batches, which has little
/// left to copy and lets the log be reused from its start.
final class Checkpointer: Sendable {
    /// Seconds between checkpoints while writes continue. Default 1: each checkpoint
    /// copies a page once however often it changed since the last one, so the hot pages of
    /// a busy ledger are copied less often (docs/performance.md). Readers skip the frames
    /// already copied, and the log starts over at `restartFrames` either way.
    let interval: Double
    /// WAL frames after which the writer restarts the log. Default 65,536 (256 MiB of 4 KiB
    /// pages). A restart stalls the writer while it copies the last frames and fsyncs the
    /// database file, so it should be rare; the log file keeps its largest size until the
    /// server stops (TRUNCATE) — when writes pause, the log is reused from its start
    /// without a restart.
    let restartFrames: Int

    private struct State {
        var dirty = false
        var stopped = false
    }
    private let restart = Atomic<Bool>(false)
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    private nonisolated(unsafe) let db: SQLiteConnection

    init(path: String, interval: Double = 1, restartFrames: Int = 65_536) throws {
        db = try SQLiteConnection(path: path)
        self.interval = interval
        self.restartFrames = restartFrames
        let t = Thread { [self] in
            nameCurrentThread("kl-checkpoint")
            self.run()
        }
        t.start()
    }

    /// Called by the writer after a commit.
    func committed() {
        let first = state.withLock { s -> Bool in
            defer { s.dirty = true }
            return !s.dirty
        }
        if first { wake.signal() }
    }

    /// Whether the writer should run `PRAGMA wal_checkpoint(RESTART)` now (asked once).
    var restartRequested: Bool {
        restart.compareExchange(expected: true, desired: false, ordering: .acquiringAndReleasing).exchanged
    }

    /// Runs a last full checkpoint (so the database file is complete) and stops the thread.
    func stop() {
        state.withLock { $0.stopped = true }
        wake.signal()
        done.wait()
    }

    private func run() {
        while true {
            wake.wait()
            let stopped = state.withLock { s -> Bool in s.dirty = false; return s.stopped }
            if stopped {
                _ = try? checkpoint("TRUNCATE")
                done.signal()
                return
            }
            if let pass = try? checkpoint("PASSIVE"), pass.frames > restartFrames {
                prepareRestart(copied: pass.copied)
                restart.store(true, ordering: .releasing)
            }
            Thread.sleep(forTimeInterval: interval)
        }
    }

    /// Does here, beside the writer, most of what the writer's RESTART would otherwise do
    /// while commits wait. Under continuous writes a PASSIVE pass never reaches the end of
    /// the log, and SQLite fsyncs the database file only when a pass does: the pages copied
    /// since the last restart are still unsynced, and the RESTART had to fsync all of them.
    /// So: fsync the database file now, then copy what was committed meanwhile and fsync
    /// again, pass after pass while a pass still finds many new frames (each pass is
    /// shorter than the one before: it copies what came in during it), so the RESTART is
    /// left only the frames of the last short pass (docs/performance.md).
    private func prepareRestart(copied: Int) {
        try? db.syncDatabaseFile()
        lastPrepare = Checkpointer.preparePasses(from: copied) {
            guard let pass = try? checkpoint("PASSIVE") else { return nil }
            try? db.syncDatabaseFile()
            return pass.copied
        }
    }

    /// Runs `pass` (a copy and an fsync; it answers how many of the log's frames are copied
    /// after it, nil when it failed) until one pass copies fewer than `fewFrames` new
    /// frames, or `maxPreparePasses` have run. `copied`: frames copied before the first.
    /// Answers the new frames of each pass.
    static func preparePasses(from copied: Int, _ pass: () -> Int?) -> [Int] {
        var before = copied
        var passes: [Int] = []
        while passes.count < maxPreparePasses, let now = pass() {
            passes.append(now - before)
            before = now
            if passes.last! < fewFrames { break }
        }
        return passes
    }

    /// At most this many copy-and-fsync passes before asking for the restart.
    static let maxPreparePasses = 6
    /// A pass that copied fewer new frames than this ends the preparation.
    static let fewFrames = 1024

    /// New frames each pass of the last `prepareRestart` copied (tests; checkpoint thread only).
    nonisolated(unsafe) private(set) var lastPrepare: [Int] = []

    /// After a checkpoint in `mode`: frames in the WAL, and how many of them are copied into
    /// the database file.
    private func checkpoint(_ mode: String) throws -> (frames: Int, copied: Int) {
        guard let row = try db.queryOne("PRAGMA wal_checkpoint(\(mode))") else { return (0, 0) }
        return (Int(row.int(1)), Int(row.int(2)))
    }
}
