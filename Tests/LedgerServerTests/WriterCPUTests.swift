import Foundation
import Glibc
import LedgerModel
import LedgerServerTesting
import Synchronization
import XCTest
@testable import LedgerStorageSQLite

/// `--writer-cpu`: the flag's values, finding the CPUs that take a disk's completion
/// interrupts (on a made-up `/sys` and `/proc`), what `auto` decides from them, and the
/// writer thread of a running server kept where it was told.
final class WriterCPUTests: XCTestCase {
    func testTheFlagTakesAutoAnyOrACPUList() {
        XCTAssertEqual(WriterCPU("auto"), .auto)
        XCTAssertEqual(WriterCPU("any"), .any)
        XCTAssertEqual(WriterCPU("1"), .cpus([1]))
        XCTAssertEqual(WriterCPU("0-2,5"), .cpus([0, 1, 2, 5]))
        XCTAssertEqual(WriterCPU("5,1,1-2"), .cpus([1, 2, 5]))
        for bad in ["", "x", "3-1", "-1", "1-", "1,,2", "1024", "0-1024", "1.5", "Auto", " "] {
            XCTAssertNil(WriterCPU(bad), bad)
        }
        XCTAssertEqual(CPUList.parse("0-3,8,10-11\n"), [0, 1, 2, 3, 8, 10, 11])
        XCTAssertEqual(CPUList.parse(""), [])
        XCTAssertEqual(CPUList.format([0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11")
        XCTAssertEqual(CPUList.format([7]), "7")
        XCTAssertEqual(CPUList.format([]), "")
        // A list must name a CPU the process may run on.
        XCTAssertNil(WriterCPU.cpus([1, 5]).problem(allowed: [0, 1]))
        XCTAssertEqual(WriterCPU.cpus([5, 6]).problem(allowed: [0, 1]), "none of CPUs 5-6 is one this process may run on (0-1)")
        XCTAssertNil(WriterCPU.cpus([5]).problem(allowed: nil), "unknown: left to the kernel")
        XCTAssertNil(WriterCPU.auto.problem(allowed: [0]))
    }

    /// A made-up `/sys` and `/proc`: a virtio disk `vda` (253:0, partition vda1 253:1) on
    /// PCI function 00:02.0 with a configuration interrupt (35, on CPU 0) and one queue
    /// (36, on CPU `queueCPUs`); an NVMe disk (259:0) with a queue per CPU 0–3 (40–43);
    /// a loop device (7:0).
    private func fakeSystem(queueCPUs: String = "1") throws -> (root: URL, interrupts: DiskInterrupts) {
        let fm = FileManager.default
        let root = fm.temporaryDirectory.appendingPathComponent("writer-cpu-\(UUID().uuidString)")
        let sys = root.appendingPathComponent("sys").path, proc = root.appendingPathComponent("proc").path
        func dir(_ p: String) throws { try fm.createDirectory(atPath: p, withIntermediateDirectories: true) }
        func file(_ p: String, _ text: String) throws {
            try dir((p as NSString).deletingLastPathComponent)
            try text.write(toFile: p, atomically: false, encoding: .utf8)
        }
        func link(_ p: String, _ to: String) throws {
            try dir((p as NSString).deletingLastPathComponent)
            try fm.createSymbolicLink(atPath: p, withDestinationPath: to)
        }
        let virtio = "\(sys)/devices/pci0000:00/0000:00:02.0"
        try file("\(virtio)/msi_irqs/35", "msix"); try file("\(virtio)/msi_irqs/36", "msix")
        try file("\(virtio)/virtio1/block/vda/dev", "253:0")
        try link("\(virtio)/virtio1/block/vda/device", "../../../virtio1")
        try file("\(virtio)/virtio1/block/vda/vda1/partition", "1")
        try link("\(sys)/dev/block/253:0", "../../devices/pci0000:00/0000:00:02.0/virtio1/block/vda")
        try link("\(sys)/dev/block/253:1", "../../devices/pci0000:00/0000:00:02.0/virtio1/block/vda/vda1")
        let nvme = "\(sys)/devices/pci0000:00/0000:00:04.0"
        for irq in 40...43 { try file("\(nvme)/msi_irqs/\(irq)", "msix") }
        try file("\(nvme)/nvme/nvme0/nvme0n1/dev", "259:0")
        try link("\(nvme)/nvme/nvme0/nvme0n1/device", "../../nvme0")
        try link("\(sys)/dev/block/259:0", "../../devices/pci0000:00/0000:00:04.0/nvme/nvme0/nvme0n1")
        try file("\(sys)/devices/virtual/block/loop0/dev", "7:0")
        try link("\(sys)/dev/block/7:0", "../../devices/virtual/block/loop0")
        try file("\(proc)/interrupts", """
                       CPU0       CPU1       CPU2       CPU3
              35:          0          1          0          0  PCI-MSIX-0000:00:02.0   0-edge      virtio1-config
              36:          0   18392197          0          0  PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0
              40:        100          0          0          0  PCI-MSIX-0000:00:04.0   0-edge      nvme0q1
              41:          0        100          0          0  PCI-MSIX-0000:00:04.0   1-edge      nvme0q2
              42:          0          0        100          0  PCI-MSIX-0000:00:04.0   2-edge      nvme0q3
              43:          0          0          0        100  PCI-MSIX-0000:00:04.0   3-edge      nvme0q4
             NMI:          0          0          0          0   Non-maskable interrupts

            """)
        try file("\(proc)/irq/35/effective_affinity_list", "0\n")
        try file("\(proc)/irq/36/effective_affinity_list", queueCPUs + "\n")
        for (i, irq) in (40...43).enumerated() {
            // Older kernels have no effective_affinity_list: the configured list is read then.
            try file("\(proc)/irq/\(irq)/smp_affinity_list", "\(i)\n")
        }
        return (root, DiskInterrupts(sys: sys, proc: proc))
    }

    func testTheCPUsThatCompleteADisksIOAreFoundInSysAndProc() throws {
        let (root, interrupts) = try fakeSystem()
        defer { try? FileManager.default.removeItem(at: root) }
        // The queue's CPU, not the configuration interrupt's; a partition is its disk's.
        XCTAssertEqual(interrupts.completionCPUs(major: 253, minor: 0)?.disk, "vda")
        XCTAssertEqual(interrupts.completionCPUs(major: 253, minor: 0)?.cpus, [1])
        XCTAssertEqual(interrupts.completionCPUs(major: 253, minor: 1)?.disk, "vda")
        XCTAssertEqual(interrupts.completionCPUs(major: 253, minor: 1)?.cpus, [1])
        XCTAssertEqual(interrupts.completionCPUs(major: 259, minor: 0)?.disk, "nvme0n1")
        XCTAssertEqual(interrupts.completionCPUs(major: 259, minor: 0)?.cpus, [0, 1, 2, 3])
        XCTAssertNil(interrupts.completionCPUs(major: 7, minor: 0), "a loop device has no interrupts")
        XCTAssertNil(interrupts.completionCPUs(major: 8, minor: 0), "no such device")
        XCTAssertNil(DiskInterrupts(sys: root.path + "/nothing", proc: root.path + "/nothing").completionCPUs(major: 253, minor: 0))
    }

    func testAutoKeepsTheWriterOnTheInterruptCPUsOnlyWhenTheyAreSomeOfTheProcesss() {
        func cpus(_ c: WriterCPU, _ allowed: [Int]?, _ disk: [Int]?) -> [Int]? {
            WriterPlacement.decide(c, allowed: allowed, disk: disk.map { ("vda", $0) }).cpus
        }
        XCTAssertEqual(cpus(.auto, [0, 1], [1]), [1])
        XCTAssertEqual(cpus(.auto, [0, 1, 2, 3], [2, 3, 9]), [2, 3], "only CPUs the process may use")
        XCTAssertNil(cpus(.auto, [0, 1], [0, 1]), "a queue per CPU: no choice to make")
        XCTAssertNil(cpus(.auto, [0, 1], [5]), "the interrupts go to CPUs the process may not use")
        XCTAssertNil(cpus(.auto, [0, 1], nil), "unknown disk")
        XCTAssertNil(cpus(.auto, nil, [1]), "unknown process CPUs")
        XCTAssertNil(cpus(.any, [0, 1], [1]))
        XCTAssertEqual(cpus(.cpus([0]), [0, 1], [1]), [0])
        XCTAssertEqual(WriterPlacement.decide(.auto, allowed: [0, 1], disk: ("vda", [1])).reason, "vda completes I/O on CPUs 1")
    }

    /// The placement of a thread over the made-up system, for the folder the test runs in:
    /// its device's numbers lead to the made-up virtio disk. Moving the queue's interrupt
    /// moves the thread at the next look.
    func testAutoFollowsTheInterruptWhenItMoves() throws {
        guard let allowed = ThreadAffinity.current(), allowed.count >= 2 else {
            throw XCTSkip("needs at least two CPUs")
        }
        let (root, interrupts) = try fakeSystem(queueCPUs: "\(allowed[1])")
        defer { try? FileManager.default.removeItem(at: root) }
        // The made-up disk answers for this folder's device.
        let (major, minor) = try XCTUnwrap(DiskInterrupts.deviceNumbers(of: root.path))
        let sys = root.appendingPathComponent("sys").path
        try? FileManager.default.removeItem(atPath: "\(sys)/dev/block/\(major):\(minor)")
        try FileManager.default.createSymbolicLink(atPath: "\(sys)/dev/block/\(major):\(minor)",
                                                   withDestinationPath: "../../devices/pci0000:00/0000:00:02.0/virtio1/block/vda")

        let reports = Mutex<[(WriterPlacement.Decision, Int32?)]>([])
        let placement = WriterPlacement(.auto, dataDirectory: root.path, interrupts: interrupts, recheckSeconds: 0) { d, ok in
            reports.withLock { $0.append((d, ok)) }
        }
        let seen = Mutex<[[Int]?]>([])
        let done = DispatchSemaphore(value: 0)
        let t = Thread {
            placement.start()
            seen.withLock { $0.append(ThreadAffinity.current()) }
            placement.recheck()   // unchanged: no new report
            try? "\(allowed[0])\n".write(toFile: root.path + "/proc/irq/36/effective_affinity_list", atomically: false, encoding: .utf8)
            placement.recheck()
            seen.withLock { $0.append(ThreadAffinity.current()) }
            // Every CPU: back to anywhere.
            try? CPUList.format(allowed).write(toFile: root.path + "/proc/irq/36/effective_affinity_list", atomically: false, encoding: .utf8)
            placement.recheck()
            seen.withLock { $0.append(ThreadAffinity.current()) }
            done.signal()
        }
        t.start()
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(seen.withLock { $0 }, [[allowed[1]], [allowed[0]], allowed])
        let r = reports.withLock { $0 }
        XCTAssertEqual(r.map(\.0.cpus), [[allowed[1]], [allowed[0]], nil])
        XCTAssertEqual(r.map(\.1), [nil, nil, nil], "none refused")
    }

    /// A server told `--writer-cpu N` keeps its writer thread (`kl-writer`) on CPU N, says so
    /// in its log, and still writes; a bad value stops it at once with the flag's message.
    func testTheServersWriterThreadRunsWhereItIsTold() throws {
        guard let cpu = ThreadAffinity.current()?.last else { throw XCTSkip("no CPU affinity here") }
        try withTemporaryDataDirectory("writer-cpu") { configuration in
            let binary = try ServerProcess.binary()
            let server = try ServerProcess(binary: binary, dataDir: configuration.dataDirectory, arguments: ["--writer-cpu", "\(cpu)"])
            defer { server.kill9() }
            let client = HTTPTestClient(port: server.port)
            let token = client.call("POST", "/v1/accounts", json: .obj(["handle": "mum", "displayName": "Mum"])).json["token"]!["secret"]!.stringValue!
            XCTAssertEqual(client.call("POST", "/v1/households", token: token, json: .obj(["name": "Home"])).status, 201)
            let tasks = "/proc/\(server.process.processIdentifier)/task"
            let writer = try FileManager.default.contentsOfDirectory(atPath: tasks).first {
                (try? String(contentsOfFile: "\(tasks)/\($0)/comm", encoding: .utf8))?.hasPrefix("kl-writer") ?? false
            }
            let status = try String(contentsOfFile: "\(tasks)/\(try XCTUnwrap(writer))/status", encoding: .utf8)
            XCTAssertTrue(status.contains("Cpus_allowed_list:\t\(cpu)\n"), status)
            let log = try String(contentsOfFile: server.logPath, encoding: .utf8)
            XCTAssertTrue(log.contains("\"event\":\"writer_cpu\",\"reason\":\"--writer-cpu \(cpu)\",\"cpus\":\"\(cpu)\""), server.logTail)
        }
        // A value that is not a choice, and a CPU the process may not run on: refused at start
        // (not logged and ignored).
        for (value, message) in [("fast", "--writer-cpu must be auto, any or a CPU list such as 1 or 0-3, got fast"),
                                 ("1023", "--writer-cpu: none of CPUs 1023 is one this process may run on")] {
            let p = Process()
            p.executableURL = try ServerProcess.binary()
            p.arguments = ["serve", "--writer-cpu", value]
            let err = Pipe()
            p.standardError = err
            p.standardOutput = FileHandle.nullDevice
            try p.run()
            let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            XCTAssertEqual(p.terminationStatus, 2, text)
            XCTAssertTrue(text.contains(message), text)
        }
    }
}
