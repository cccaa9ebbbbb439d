#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import SystemKit

/// Which CPUs the SQLite writer thread runs on (`--writer-cpu`).
///
/// Every group commit ends in an `fdatasync` of the WAL: the page write and the cache flush
/// each complete with an interrupt, and the interrupt wakes the writer. A disk with one
/// completion queue (a virtio disk with one queue, as small VMs have) takes all of those
/// interrupts on one CPU; a writer running on another CPU is then woken across CPUs twice
/// per commit, and in a VM each such wake-up is a VM exit on both sides. Kept on the CPU
/// that takes the interrupts, the wake-up stays local. It gained in one bench and not in
/// another (docs/performance.md), so `.any` is the default and `.auto` a choice to measure
/// on one's own machine.
public enum WriterCPU: Equatable, Sendable {
    /// On the CPUs that take the data disk's completion interrupts when those are some but
    /// not all of the CPUs the process may use; anywhere when they are all of them (a disk
    /// with a queue per CPU, such as NVMe), or unknown (no `/sys`, a folder on a virtual,
    /// network or device-mapper filesystem). Looked at again every 30 seconds, since a
    /// daemon such as irqbalance may move the interrupts.
    case auto
    /// Wherever the scheduler puts it.
    case any
    /// On these CPUs (numbers as the kernel counts them).
    case cpus([Int])

    /// `auto`, `any`, or a CPU list such as `1`, `0,2` or `4-7` (the kernel's list format).
    public init?(_ text: String) {
        switch text {
        case "auto": self = .auto
        case "any": self = .any
        default:
            guard let list = CPUList.parse(text), !list.isEmpty else { return nil }
            self = .cpus(list)
        }
    }

    /// Why the choice cannot be kept on the CPUs the calling thread may use: a CPU list none
    /// of whose CPUs is one of them. nil when it can, or when they are not known.
    public func problem() -> String? { problem(allowed: ThreadAffinity.current()) }

    func problem(allowed: [Int]?) -> String? {
        guard case .cpus(let list) = self, let allowed, !list.contains(where: allowed.contains) else { return nil }
        return "none of CPUs \(CPUList.format(list)) is one this process may run on (\(CPUList.format(allowed)))"
    }
}

/// The kernel's CPU list format: `0-3,8,10-11`.
enum CPUList {
    /// The CPUs in ascending order, without repeats; nil for text that is not a list
    /// (an empty text is an empty list). At most CPU 1023.
    static func parse<S: StringProtocol>(_ text: S) -> [Int]? {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.isEmpty { return [] }
        var cpus = Set<Int>()
        for part in trimmed.split(separator: ",", omittingEmptySubsequences: false) {
            let ends = part.split(separator: "-", omittingEmptySubsequences: false)
            guard (1...2).contains(ends.count),
                  let low = Int(ends[0]), let high = Int(ends[ends.count - 1]),
                  low >= 0, low <= high, high < ThreadAffinity.maxCPUs else { return nil }
            cpus.formUnion(low...high)
        }
        return cpus.sorted()
    }

    /// The shortest list text for `cpus` (sorted, no repeats): `[0, 1, 2, 5]` is `0-2,5`.
    static func format(_ cpus: [Int]) -> String {
        var parts: [String] = []
        var i = 0
        while i < cpus.count {
            var j = i
            while j + 1 < cpus.count, cpus[j + 1] == cpus[j] + 1 { j += 1 }
            parts.append(i == j ? "\(cpus[i])" : "\(cpus[i])-\(cpus[j])")
            i = j + 1
        }
        return parts.joined(separator: ",")
    }
}

/// Which CPUs complete the I/O of the disk that holds a path, from `/sys` and `/proc` (the
/// roots can be other folders, for tests). Linux only; nil wherever the answer is not clear.
struct DiskInterrupts {
    var sys = "/sys"
    var proc = "/proc"

    /// The disk (its kernel name, such as `vda`) and the CPUs its queues' interrupts are
    /// delivered to, for the filesystem holding `path`.
    func completionCPUs(of path: String) -> (disk: String, cpus: [Int])? {
        Self.deviceNumbers(of: path).flatMap { completionCPUs(major: $0.major, minor: $0.minor) }
    }

    /// The major and minor numbers of the device holding `path`; nil if it cannot be read.
    static func deviceNumbers(of path: String) -> (major: UInt64, minor: UInt64)? {
        #if os(Linux)
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        let dev = UInt64(st.st_dev)
        // glibc's encoding of a device number (sys/sysmacros.h).
        return (((dev >> 8) & 0xfff) | ((dev >> 32) & 0xffff_f000), (dev & 0xff) | ((dev >> 12) & 0xffff_ff00))
        #else
        return nil
        #endif
    }

    /// The same for a block device given by its numbers.
    func completionCPUs(major: UInt64, minor: UInt64) -> (disk: String, cpus: [Int])? {
        guard var block = resolvedPath("\(sys)/dev/block/\(major):\(minor)") else { return nil }
        // A partition's folder sits inside its disk's.
        if FileManager.default.fileExists(atPath: block + "/partition") { block = parent(block) }
        // Loop, RAM, device-mapper and md disks have no interrupts of their own.
        guard !block.contains("/devices/virtual/") else { return nil }
        let disk = String(block.split(separator: "/").last ?? "")
        // The interrupts belong to the controller: the disk's device folder or one above it.
        guard var device = resolvedPath(block + "/device") else { return nil }
        var irqs: [Int] = []
        for _ in 0..<4 {
            if let names = try? FileManager.default.contentsOfDirectory(atPath: device + "/msi_irqs") {
                irqs = names.compactMap { Int($0) }
                break
            }
            device = parent(device)
            guard device.hasPrefix(sys + "/devices/") else { return nil }
        }
        // A virtio controller's configuration-change interrupt is not an I/O completion.
        let names = interruptNames()
        irqs = irqs.filter { !(names[$0]?.contains("config") ?? false) }
        var cpus = Set<Int>()
        for irq in irqs {
            guard let list = read("\(proc)/irq/\(irq)/effective_affinity_list") ?? read("\(proc)/irq/\(irq)/smp_affinity_list"),
                  let parsed = CPUList.parse(list) else { continue }
            cpus.formUnion(parsed)
        }
        return cpus.isEmpty ? nil : (disk, cpus.sorted())
    }

    /// Each interrupt's name, the last column of `/proc/interrupts`.
    private func interruptNames() -> [Int: String] {
        guard let text = read("\(proc)/interrupts") else { return [:] }
        var names: [Int: String] = [:]
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 2, fields[0].hasSuffix(":"), let n = Int(fields[0].dropLast()) else { continue }
            names[n] = String(fields[fields.count - 1])
        }
        return names
    }

    private func read(_ path: String) -> String? { try? String(contentsOfFile: path, encoding: .utf8) }

    private func parent(_ path: String) -> String { (path as NSString).deletingLastPathComponent }
}

/// The calling thread's CPU affinity (`sched_getaffinity` / `sched_setaffinity`; Linux only).
enum ThreadAffinity {
    /// The largest CPU count handled (the size of glibc's `cpu_set_t`).
    static let maxCPUs = 1024

    /// The CPUs the calling thread may run on; nil where that cannot be read.
    static func current() -> [Int]? {
        #if os(Linux)
        var mask = [UInt64](repeating: 0, count: maxCPUs / 64)
        let r = mask.withUnsafeMutableBytes { c_sched_getaffinity(0, $0.count, $0.baseAddress!) }
        guard r == 0 else { return nil }
        return (0..<maxCPUs).filter { mask[$0 / 64] & (1 << UInt64($0 % 64)) != 0 }
        #else
        return nil
        #endif
    }

    /// Keeps the calling thread on `cpus`; false (errno set) if the kernel refused.
    static func set(_ cpus: [Int]) -> Bool {
        #if os(Linux)
        var mask = [UInt64](repeating: 0, count: maxCPUs / 64)
        for c in cpus where c >= 0 && c < maxCPUs { mask[c / 64] |= 1 << UInt64(c % 64) }
        return mask.withUnsafeBytes { c_sched_setaffinity(0, $0.count, $0.baseAddress!) } == 0
        #else
        return false
        #endif
    }
}

#if os(Linux)
// Not in Swift's view of Glibc (they need _GNU_SOURCE); the C library's own functions.
@_silgen_name("sched_getaffinity") private func c_sched_getaffinity(_ pid: Int32, _ size: Int, _ mask: UnsafeMutableRawPointer) -> Int32
@_silgen_name("sched_setaffinity") private func c_sched_setaffinity(_ pid: Int32, _ size: Int, _ mask: UnsafeRawPointer) -> Int32
#endif

/// Applies a `WriterCPU` choice on the writer thread: at its start, and for `.auto` again
/// every `recheckSeconds` (from the writer's loop, between batches). Used by that one
/// thread only. Reports each new placement through `report`, with the error number when
/// the kernel refused it.
final class WriterPlacement: @unchecked Sendable {
    struct Decision: Equatable {
        /// nil: anywhere the process may run.
        var cpus: [Int]?
        var reason: String
    }

    let choice: WriterCPU
    let dataDirectory: String
    let interrupts: DiskInterrupts
    let recheckSeconds: Double
    private let report: @Sendable (Decision, _ refused: Int32?) -> Void
    /// The CPUs the process may use, read when the thread starts (before any pinning).
    private var allowed: [Int]?
    private var last: Decision?
    private var nextCheck: UInt64 = 0

    init(_ choice: WriterCPU, dataDirectory: String, interrupts: DiskInterrupts = DiskInterrupts(),
         recheckSeconds: Double = 30, report: @escaping @Sendable (Decision, _ refused: Int32?) -> Void) {
        self.choice = choice
        self.dataDirectory = dataDirectory
        self.interrupts = interrupts
        self.recheckSeconds = recheckSeconds
        self.report = report
    }

    /// What `choice` comes to, given the CPUs the process may use and the disk's interrupts.
    static func decide(_ choice: WriterCPU, allowed: [Int]?, disk: (disk: String, cpus: [Int])?) -> Decision {
        switch choice {
        case .any:
            return Decision(cpus: nil, reason: "--writer-cpu any")
        case .cpus(let list):
            return Decision(cpus: list, reason: "--writer-cpu \(CPUList.format(list))")
        case .auto:
            guard let disk else { return Decision(cpus: nil, reason: "the data disk's interrupt CPUs are not known") }
            guard let allowed else { return Decision(cpus: nil, reason: "the process's CPUs are not known") }
            let both = disk.cpus.filter { allowed.contains($0) }
            if both.isEmpty || both.count == allowed.count {
                return Decision(cpus: nil, reason: "\(disk.disk) completes I/O on CPUs \(CPUList.format(disk.cpus)), not a subset of \(CPUList.format(allowed))")
            }
            return Decision(cpus: both, reason: "\(disk.disk) completes I/O on CPUs \(CPUList.format(disk.cpus))")
        }
    }

    /// Places the calling thread (the writer, as it starts).
    func start() {
        allowed = ThreadAffinity.current()
        apply()
    }

    /// Looks again when `.auto` and the time has come (after every batch: a fixed choice
    /// reads no clock).
    func recheck() {
        guard choice == .auto else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        if now >= nextCheck { apply(now: now) }
    }

    private func apply(now: UInt64 = DispatchTime.now().uptimeNanoseconds) {
        nextCheck = now + UInt64(recheckSeconds * 1e9)
        let disk = choice == .auto ? interrupts.completionCPUs(of: dataDirectory) : nil
        let decision = Self.decide(choice, allowed: allowed, disk: disk)
        guard decision != last else { return }
        // Back to every allowed CPU when the choice is "anywhere" after a pinned one.
        let target = decision.cpus ?? (last?.cpus != nil ? allowed : nil)
        // The error number as the failing call left it.
        let refused = target.flatMap { ThreadAffinity.set($0) ? nil : errno }
        last = decision
        report(decision, refused)
    }
}
