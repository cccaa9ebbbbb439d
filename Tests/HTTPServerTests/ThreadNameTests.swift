import Foundation
import HTTPServer
import SystemKit
import XCTest

/// Threads carry their names to the system (`top -H`, perf, /proc), cut to Linux's 15 bytes.
final class ThreadNameTests: XCTestCase {
    private static func comm(_ path: String) -> String? {
        (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func testTheCallingThreadIsNamedAndALongNameIsCut() throws {
        #if os(Linux)
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var seen: (String?, String?) = (nil, nil)
        let t = Thread {
            nameCurrentThread("kl-short")
            let first = ThreadNameTests.comm("/proc/thread-self/comm")
            nameCurrentThread("kl-a-name-longer-than-fifteen")
            seen = (first, ThreadNameTests.comm("/proc/thread-self/comm"))
            done.signal()
        }
        t.start()
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(seen.0, "kl-short")
        XCTAssertEqual(seen.1, "kl-a-name-longe")
        #else
        throw XCTSkip("reads the name back from /proc")
        #endif
    }

    func testEventLoopThreadsAreNamed() throws {
        #if os(Linux)
        var config = HTTPServerConfiguration()
        config.port = 0
        config.eventLoops = 2
        config.shutdownDeadline = 2
        let server = HTTPServer(configuration: config, handler: ClosureHandler(HTTPServerTests.echo))
        try server.start()
        defer { server.shutdown() }
        // Each loop names itself as its thread begins: wait for both.
        var names = Set<String>()
        let deadline = Date().addingTimeInterval(10)
        repeat {
            names = Set((try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")).compactMap {
                ThreadNameTests.comm("/proc/self/task/\($0)/comm")
            })
            if names.isSuperset(of: ["kl-loop-0", "kl-loop-1"]) { break }
            Thread.sleep(forTimeInterval: 0.01)
        } while Date() < deadline
        XCTAssertTrue(names.isSuperset(of: ["kl-loop-0", "kl-loop-1"]), "\(names.sorted())")
        #else
        throw XCTSkip("reads the names from /proc")
        #endif
    }
}
