import Foundation
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
import LedgerServerTesting
@testable import LedgerStorageSQLite
import XCTest

/// Two servers over one PostgreSQL database, as several processes behind a load balancer:
/// a code issued at one redeems at the other, and the limits count both servers' failures.
/// (SQLite serves one process: these skip there.)
final class AccountAccessSharingTests: XCTestCase {
    var first: TestServer!
    var second: TestServer!

    override func setUpWithError() throws {
        guard TestServer.postgresURL != nil else { throw XCTSkip("several servers share one database only over PostgreSQL") }
        let configure: (inout LedgerAppConfiguration) -> Void = {
            $0.trustedProxies = ["127.0.0.1"]
            $0.accountAccess.linkCodeFailuresPerMinute = 6
            $0.accountAccess.recoveryFailuresPerHandlePerHour = 4
        }
        first = try TestServer(configure: configure)
        let url = first.app.configuration.databaseURL
        second = try TestServer { c in
            configure(&c)
            c.databaseURL = url
        }
    }

    override func tearDown() {
        second?.stop()
        first?.stop()
    }

    func testALinkCodeIssuedAtOneServerRedeemsAtTheOtherOnce() throws {
        let (account, token) = first.signup(TestServer.handle("a"))
        let code = first.call("POST", "/v1/link-codes", token: token).json["code"]!.stringValue!
        let r = second.call("POST", "/v1/link-codes/redeem", json: .obj(["code": .string(code)]), headers: ["X-Forwarded-For": "10.9.0.1"])
        XCTAssertEqual(r.status, 201)
        XCTAssertEqual(r.json["account"]?["id"]?.stringValue, account)
        let again = first.call("POST", "/v1/link-codes/redeem", json: .obj(["code": .string(code)]), headers: ["X-Forwarded-For": "10.9.0.2"])
        XCTAssertEqual(again.code, "link_code_invalid")
    }

    func testLimitsCountFailuresAtEveryServer() throws {
        var statuses: [Int: Int] = [:]
        for i in 0..<40 {
            let server = i % 2 == 0 ? first! : second!
            let r = server.call("POST", "/v1/link-codes/redeem", json: .obj(["code": .string(String(format: "ZZZZ-ZZZZ-%04d", i))]),
                                headers: ["X-Forwarded-For": "192.0.2.77"])
            statuses[r.status, default: 0] += 1
        }
        XCTAssertEqual(statuses[404], 6, "\(statuses)")
        XCTAssertEqual(statuses[429], 34, "\(statuses)")

        let handle = TestServer.handle("r")
        let (_, token) = first.signup(handle)
        let codes = first.call("POST", "/v1/me/recovery-codes", token: token).json["codes"]!.arrayValue!.compactMap(\.stringValue)
        statuses = [:]
        for i in 0..<20 {
            let server = i % 2 == 0 ? first! : second!
            let r = server.call("POST", "/v1/accounts/recover", json: .obj(["handle": .string(handle), "code": "0000-0000-0000-0000"]),
                                headers: ["X-Forwarded-For": "10.8.0.\(i)"])
            statuses[r.status, default: 0] += 1
        }
        XCTAssertEqual(statuses[401], 4, "\(statuses)")
        XCTAssertEqual(statuses[429], 16, "\(statuses)")
        for server in [first!, second!] {
            let r = server.call("POST", "/v1/accounts/recover", json: .obj(["handle": .string(handle), "code": .string(codes[0])]),
                                headers: ["X-Forwarded-For": "10.8.1.1"])
            XCTAssertEqual(r.status, 429, "the right code, once the handle is limited at either server")
        }
    }
}
