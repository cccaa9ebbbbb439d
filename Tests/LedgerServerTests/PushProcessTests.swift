import Foundation
import IDTokenKitTesting
import LedgerServerTesting
import Glibc
import LedgerModel
import XCTest

/// Push wakes across server processes (the built binary): a wake committed before the
/// process is killed with SIGKILL is sent after it starts again, on the backend the suite
/// runs against; and over PostgreSQL two processes sending from one outbox send each wake
/// once.
final class PushProcessTests: XCTestCase {
    static let notifyPath = "/_matrix/push/v1/notify"
    private var dataDirs: [String] = []
    private var servers: [ServerProcess] = []
    private var schemas: [String] = []

    override func tearDown() {
        if let run = testRun, run.failureCount + run.unexpectedExceptionCount > 0 {
            for s in servers { print("--- server (port \(s.port)) log tail:\n\(s.logTail)") }
        }
        for s in servers { s.kill9() }
        for d in dataDirs { try? FileManager.default.removeItem(atPath: d) }
        for schema in schemas { TestServer.dropSchema(schema) }
    }

    /// A server process sending wakes to `gateway` (retries and intervals in milliseconds),
    /// over `databaseURL` (nil: SQLite in `dataDir`).
    /// `timeout`: of a gateway call; a call the gateway answers after it is sent again (at
    /// least once), so a test that counts sends gives the loaded machine room.
    private func startServer(dataDir: String, gateway: String, databaseURL: String?, minInterval: String = "0",
                             timeout: String = "0.5") throws -> ServerProcess {
        var args = ["--log-level", "warning", "--registrations-per-hour", "0", "--auth-failures-per-minute", "100000",
                    "--push-gateway", gateway, "--push-min-interval", minInterval, "--push-retry-seconds", "0.05",
                    "--push-retry-max-seconds", "0.1", "--push-poll-seconds", "0.05", "--push-timeout", timeout]
        if let databaseURL { args += ["--database-url", databaseURL] }
        let s = try ServerProcess(binary: try ServerProcess.binary(), dataDir: dataDir, arguments: args)
        servers.append(s)
        return s
    }

    private func newDataDir() -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-push-\(UUID().uuidString)").path
        dataDirs.append(dir)
        return dir
    }

    /// The suite's PostgreSQL in a fresh schema, when it runs against one.
    private func databaseURL() throws -> String? {
        guard let url = TestServer.postgresURL else { return nil }
        let fresh = try TestServer.freshSchema(url, prefix: "push")
        schemas.append(fresh.schema)
        return fresh.url
    }

    static func key() -> String { (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined() }

    /// Mum's household with Dad as an accepted participant whose devices register `keys`.
    private func family(_ http: LoopbackHTTP, keys: [String]) throws -> (mum: String, household: String, child: String) {
        func signup(_ handle: String) -> String {
            http.call("POST", "/v1/accounts", json: .obj(["handle": .string(handle), "displayName": .string(handle)])).json["token"]!["secret"]!.stringValue!
        }
        let mum = signup("mum"), dad = signup("dad")
        let h = http.call("POST", "/v1/households", token: mum, json: .obj(["name": "Home"])).json["id"]!.stringValue!
        let child = http.call("POST", "/v1/households/\(h)/children", token: mum, json: .obj(["name": "Ada"])).json["id"]!.stringValue!
        _ = http.call("POST", "/v1/households/\(h)/share", token: mum)
        let invited = http.call("POST", "/v1/households/\(h)/share/participants", token: mum,
                                json: .obj(["handle": "dad", "permission": "readWrite"]))
        XCTAssertEqual(http.call("POST", "/v1/invitations/\(invited.json["invitationId"]!.stringValue!)/accept", token: dad).status, 200)
        for key in keys {
            let device = http.call("POST", "/v1/tokens", token: dad, json: .obj(["deviceName": "phone"]))
            let r = http.call("PUT", "/v1/tokens/\(device.json["id"]!.stringValue!)/push", token: dad,
                              json: .obj(["appId": "com.example.kidmoney", "pushKey": .string(key)]))
            XCTAssertEqual(r.status, 204, r.json.serializedString)
        }
        return (mum, h, child)
    }

    private func add(_ http: LoopbackHTTP, _ f: (mum: String, household: String, child: String)) {
        let r = http.call("POST", "/v1/households/\(f.household)/children/\(f.child)/transactions", token: f.mum,
                          json: .obj(["amountCents": 100]))
        XCTAssertEqual(r.status, 201, r.failure ?? r.json.serializedString)
    }

    private func eventually(_ what: String, seconds: Double = 15, _ condition: () -> Bool) {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return }
            usleep(10_000)
        }
        XCTFail("not within \(seconds) s: \(what)")
    }

    /// The wake is committed with the change while the gateway refuses connections; the
    /// server is killed with SIGKILL before it could send it; started again (the gateway
    /// back), it sends it.
    func testAWakeCommittedBeforeAKillIsSentAfterTheRestart() throws {
        let down = try StandInHTTPServer()
        let port = down.port
        down.stop()   // connections to its port are refused from now on
        let gateway = "http://127.0.0.1:\(port)\(Self.notifyPath)"
        let dir = newDataDir()
        let url = try databaseURL()
        let key = Self.key()
        var server = try startServer(dataDir: dir, gateway: gateway, databaseURL: url)
        let f = try family(LoopbackHTTP(port: server.port), keys: [key])
        add(LoopbackHTTP(port: server.port), f)
        usleep(200_000)   // a few attempts, each refused
        server.kill9()

        let up = try StandInHTTPServer(port: port)
        defer { up.stop() }
        up.answer(Self.notifyPath, json: "{}")
        server = try startServer(dataDir: dir, gateway: gateway, databaseURL: url)
        eventually("the wake is sent after the restart") { !up.requests(Self.notifyPath).isEmpty }
        let body = try JSONValue.parse(Array(try XCTUnwrap(up.requests(Self.notifyPath).first).body.utf8))
        XCTAssertEqual(body["notification"]?["room_id"]?.stringValue, f.household)
        XCTAssertEqual(body["notification"]?["devices"]?.arrayValue?.first?["pushkey"]?.stringValue, key)
    }

    /// Two processes over one PostgreSQL, both sending: changes written through both wake
    /// each of ten devices exactly once (the interval folds the rest).
    func testTwoProcessesOnOnePostgreSQLSendEachWakeOnce() throws {
        guard let url = try databaseURL() else { throw XCTSkip("needs PostgreSQL (scripts/test-postgres.sh)") }
        let gateway = try StandInHTTPServer()
        defer { gateway.stop() }
        gateway.answer(Self.notifyPath, json: "{}")
        let notify = gateway.base + Self.notifyPath
        let a = LoopbackHTTP(port: try startServer(dataDir: newDataDir(), gateway: notify, databaseURL: url, minInterval: "30",
                                                   timeout: "10").port)
        let b = LoopbackHTTP(port: try startServer(dataDir: newDataDir(), gateway: notify, databaseURL: url, minInterval: "30",
                                                   timeout: "10").port)
        let keys = (0..<10).map { _ in Self.key() }
        let f = try family(a, keys: keys)
        for i in 0..<20 { add(i % 2 == 0 ? a : b, f) }
        eventually("every device is woken") {
            Set(gateway.requests(Self.notifyPath).compactMap { r in
                (try? JSONValue.parse(Array(r.body.utf8)))?["notification"]?["devices"]?.arrayValue?.first?["pushkey"]?.stringValue
            }).count == keys.count
        }
        usleep(500_000)
        let sent = gateway.requests(Self.notifyPath).compactMap { r in
            (try? JSONValue.parse(Array(r.body.utf8)))?["notification"]?["devices"]?.arrayValue?.first?["pushkey"]?.stringValue
        }
        XCTAssertEqual(sent.count, keys.count, "each wake sent once: \(sent.count) sends for \(keys.count) devices")
        XCTAssertEqual(Set(sent), Set(keys))
    }
}
