import Foundation
import LedgerModel
@testable import LedgerServer
import LedgerServerTesting
import XCTest

/// kill -9 under load: every transaction that was acknowledged (201/200) survives, and
/// `check` passes after the restart.
final class CrashTests: XCTestCase {
    func testKill9UnderLoadLosesNoAcknowledgedWrite() throws {
        let binary = try ServerProcess.binary()
        let dataDir = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-crash-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dataDir) }
        var server = try ServerProcess(binary: binary, dataDir: dataDir)
        let client = HTTPTestClient(port: server.port)
        let signup = client.call("POST", "/v1/accounts", json: .obj(["handle": "mum", "displayName": "Mum"]))
        let token = signup.json["token"]!["secret"]!.stringValue!
        let h = client.call("POST", "/v1/households", token: token, json: .obj(["name": "Home"])).json["id"]!.stringValue!
        let c = client.call("POST", "/v1/households/\(h)/children", token: token, json: .obj(["name": "Ada"])).json["id"]!.stringValue!

        let acknowledged = Acknowledged()
        let stop = Date().addingTimeInterval(1.5)
        let group = DispatchGroup()
        for _ in 0..<16 {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                while Date() < stop {
                    let id = UUID().uuidString.lowercased()
                    let r = client.call("POST", "/v1/households/\(h)/children/\(c)/transactions", token: token,
                                        json: .obj(["id": .string(id), "amountCents": 1]), timeout: 2)
                    if r.status == 201 || r.status == 200 { acknowledged.add(id) }
                    if r.status == 0 { return }
                }
            }
        }
        Thread.sleep(forTimeInterval: 0.8)
        server.kill9()
        group.wait()
        XCTAssertGreaterThan(acknowledged.ids.count, 10, "the load produced acknowledged writes before the kill")

        server = try ServerProcess(binary: binary, dataDir: dataDir)
        defer { server.kill9() }
        let again = HTTPTestClient(port: server.port)
        var seen = Set<String>()
        var cursor: String? = nil
        repeat {
            let r = again.call("GET", "/v1/households/\(h)/children/\(c)/transactions?limit=1000" + (cursor.map { "&cursor=\($0)" } ?? ""), token: token)
            for item in r.json["items"]?.arrayValue ?? [] { seen.insert(item["id"]!.stringValue!) }
            cursor = r.json["nextCursor"]?.stringValue
        } while cursor != nil
        let missing = acknowledged.ids.filter { !seen.contains($0) }
        XCTAssertEqual(missing, [], "acknowledged transactions lost in the crash")
        let balance = again.call("GET", "/v1/households/\(h)/children/\(c)", token: token).json["balanceCents"]?.intValue
        XCTAssertEqual(balance, Int64(seen.count))
        let report = try AdminCommands.check(LedgerAppConfiguration(dataDirectory: dataDir))
        XCTAssertTrue(report.ok, report.problems.joined(separator: "\n"))
    }
}

/// Ids acknowledged by the server, collected from many threads.
final class Acknowledged: @unchecked Sendable {
    private let lock = NSLock()
    private var set = Set<String>()
    func add(_ id: String) { lock.lock(); set.insert(id); lock.unlock() }
    var ids: [String] { lock.lock(); defer { lock.unlock() }; return Array(set) }
}

/// A minimal blocking HTTP client for tests that talk to a server in another process.
struct HTTPTestClient: Sendable {
    let port: Int

    func call(_ method: String, _ path: String, token: String? = nil, json: JSONValue? = nil, timeout: Double = 10) -> TestServer.Reply {
        TestServer.request(base: "http://127.0.0.1:\(port)", method, path, token: token, json: json, rawBody: nil, headers: [:], timeout: timeout)
    }
}
