import Foundation
import HTTPServer
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
import LedgerServerTesting
import XCTest

/// The cache key of a well-formed token secret, one per `n`.
func tokenKey(_ n: Int) -> TokenSecret.TokenKey {
    let digits = String(n)
    return TokenSecret.TokenKey(secret: "kl_" + String(repeating: "A", count: 43 - digits.count) + digits)!
}

/// The read cache never serves an answer older than an acknowledged write.
final class ReadCacheTests: XCTestCase {
    func testEntriesLiveUntilTheNextCommit() {
        let cache = ReadCache(capacity: 4)
        let g = cache.current
        cache.store(HTTPResponse(status: 200, body: Array("a".utf8)), key: "k", readAt: g)
        XCTAssertEqual(cache.response("k")?.body, Array("a".utf8))
        cache.invalidate(tokens: false)
        XCTAssertNil(cache.response("k"), "a commit makes every GET answer stale")
    }

    func testKeysSeparateTheirPartsAndTellKindsApart() {
        XCTAssertEqual(ReadCache.key("children", "h", "acct", "false"), "children h acct false")
        XCTAssertEqual(ReadCache.key("child", "", "é", "x y"), "child  é x y")
        XCTAssertNotEqual(ReadCache.key("child", "a", "b", "c"), ReadCache.key("children", "a", "b", "c"))
        let long = String(repeating: "z", count: 300)
        XCTAssertEqual(ReadCache.key("child", long, long, long).utf8.count, "child".utf8.count + 3 + 900)
    }

    func testAnAnswerReadBeforeACommitIsNeverServedAfterIt() {
        let cache = ReadCache()
        let stamped = cache.current           // generation taken before the read …
        cache.invalidate(tokens: false)       // … a commit lands while the read runs …
        cache.store(HTTPResponse(status: 200, body: Array("old".utf8)), key: "k", readAt: stamped)
        XCTAssertNil(cache.response("k"), "… so the answer it produced is not kept as current")
    }

    func testTokenLookupsSurviveCommitsThatRevokeNothing() {
        let cache = ReadCache()
        let caller = Caller(accountId: "a", tokenId: "t")
        cache.store(caller, token: tokenKey(1), readAt: cache.currentTokens)
        cache.invalidate(tokens: false)
        XCTAssertEqual(cache.caller(token: tokenKey(1))?.tokenId, "t")
        cache.invalidate(tokens: true)
        XCTAssertNil(cache.caller(token: tokenKey(1)))
    }

    func testCapacityBoundsTheTable() {
        let cache = ReadCache(capacity: 2)
        for i in 0..<10 { cache.store(HTTPResponse(status: 200), key: "k\(i)", readAt: cache.current) }
        XCTAssertNotNil(cache.response("k9"))
        XCTAssertNil(cache.response("k0"))
    }

    // MARK: over HTTP

    func testWritesAreVisibleToTheNextReadOfEveryCaller() throws {
        let s = try TestServer()
        defer { s.stop() }
        let (_, mum) = s.signup("mum")
        let (_, dad) = s.signup("dad")
        let h = s.household(mum)
        let c = s.child(mum, household: h)
        s.call("POST", "/v1/households/\(h)/share", token: mum)
        let inv = s.call("POST", "/v1/households/\(h)/share/participants", token: mum,
                         json: .obj(["handle": "dad", "permission": "readWrite"])).json["invitationId"]!.stringValue!
        XCTAssertEqual(s.call("POST", "/v1/invitations/\(inv)/accept", token: dad).status, 200)

        for i in 1...20 {
            // Warm the cache with both callers' views, then write and read back at once.
            XCTAssertEqual(s.call("GET", "/v1/households/\(h)/children", token: mum).status, 200)
            XCTAssertEqual(s.call("GET", "/v1/households/\(h)/children", token: dad).status, 200)
            let writer = i.isMultiple(of: 2) ? mum : dad
            let w = s.call("POST", "/v1/households/\(h)/children/\(c)/transactions", token: writer,
                           json: .obj(["amountCents": 100, "note": .string("n\(i)")]))
            XCTAssertEqual(w.status, 201)
            for reader in [mum, dad] {
                let r = s.call("GET", "/v1/households/\(h)/children", token: reader)
                XCTAssertEqual(r.json["items"]?.arrayValue?.first?["balanceCents"]?.intValue, Int64(100 * i))
                let one = s.call("GET", "/v1/households/\(h)/children/\(c)", token: reader)
                XCTAssertEqual(one.json["balanceCents"]?.intValue, Int64(100 * i))
            }
        }

        // Renames and access changes are seen at once too.
        XCTAssertEqual(s.call("PATCH", "/v1/households/\(h)/children/\(c)", token: dad, json: .obj(["name": "Bea"])).status, 200)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/children/\(c)", token: mum).json["name"]?.stringValue, "Bea")
        let dadId = s.call("GET", "/v1/me", token: dad).json["account"]!["id"]!.stringValue!
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/children", token: dad).status, 200)
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h)/share/participants/\(dadId)", token: mum).status, 204)
        let after = s.call("GET", "/v1/households/\(h)/children", token: dad)
        XCTAssertEqual(after.status, 403); XCTAssertEqual(after.code, "access_revoked")
    }

    func testARevokedTokenIsRefusedRightAfterTheRevocation() throws {
        let s = try TestServer()
        defer { s.stop() }
        let (_, mum) = s.signup("mum")
        let phone = s.call("POST", "/v1/tokens", token: mum, json: .obj(["deviceName": "phone"]))
        let secret = phone.json["secret"]!.stringValue!
        let id = phone.json["id"]!.stringValue!
        let h = s.household(mum)
        // Many uses (and commits by others) keep the token known to the cache …
        for _ in 0..<5 {
            XCTAssertEqual(s.call("GET", "/v1/households/\(h)/children", token: secret).status, 200)
            XCTAssertEqual(s.call("POST", "/v1/households/\(h)/children", token: mum, json: .obj(["name": "Kid"])).status, 201)
        }
        // … until it is revoked: the very next request is 401.
        XCTAssertEqual(s.call("DELETE", "/v1/tokens/\(id)", token: mum).status, 204)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/children", token: secret).status, 401)
        XCTAssertEqual(s.call("GET", "/v1/me", token: secret).status, 401)
        XCTAssertEqual(s.call("GET", "/v1/me", token: mum).status, 200)
    }
}

/// The request helpers on the hot path.
final class RequestContextTests: XCTestCase {
    func testJSONMediaTypes() {
        for ok in ["application/json", "application/json; charset=utf-8", "Application/JSON;charset=UTF-8",
                   " application/json ", "application/problem+json", "application/merge-patch+json; x=y",
                   "\tAPPLICATION/VND.API+JSON\t;q=1", "application/x+json", "application/json;"] {
            XCTAssertTrue(RequestContext.isJSONMediaType(ok), ok)
        }
        for bad in ["text/plain", "application/jsonx", "application/+json", "text/json", "", ";application/json",
                    "application/x-www-form-urlencoded", "json", "application/json+", "+json", "application/jsonp",
                    "application /json", "application/json x", "applicatioN/+JSON", "Zpplication/json", "application/jsoN\u{0}",
                    "application/jsön", "application/jsom", "application/jsonp charset=utf-8", "application/json, charset=utf-8"] {
            XCTAssertFalse(RequestContext.isJSONMediaType(bad), bad)
        }
    }
}

final class MetricsTests: XCTestCase {
    func testClientMethodsDoNotGrowTheLabelSet() {
        let m = Metrics()
        for i in 0..<50 { m.record(route: "not_found", method: "ZZTOP\(i)", status: 405, seconds: 0.001) }
        m.record(route: "not_found", method: "GET", status: 404, seconds: 0.001)
        let text = m.render(openConnections: 0, parkedPolls: 0)
        XCTAssertFalse(text.contains("ZZTOP"))
        XCTAssertTrue(text.contains(#"kidledger_http_requests_total{route="not_found",method="other",status="405"} 50"#))
        XCTAssertTrue(text.contains(#"method="GET",status="404"} 1"#))
    }
}

final class AccessLineTests: XCTestCase {
    func testTheLineIsTheSameJSONAsBefore() throws {
        let entry = AccessLogEntry(method: "GET", path: #"/v1/a"b\c"#, routeLabel: nil, status: 404,
                                   bytes: 1234567, duration: 0.0012345, remoteAddress: "::1")
        var out: [UInt8] = Array("x".utf8)
        AccessLine.write(entry, route: "not_found", nowMs: 1_764_720_000_123, into: &out)
        XCTAssertEqual(String(decoding: out, as: UTF8.self),
                       #"x{"ts":"2025-12-03T00:00:00.123Z","event":"request","method":"GET","path":"/v1/a\"b\\c","#
                       + #""route":"not_found","status":404,"bytes":1234567,"durationMs":1.235,"remote":"::1"}"# + "\n")
        let parsed = try JSONValue.parse(Array(out.dropFirst().dropLast()))
        XCTAssertEqual(parsed["path"], .string(#"/v1/a"b\c"#))
        for (seconds, text) in [(0.0, "0.000"), (0.00005, "0.050"), (0.0000004, "0.000"), (2.5, "2500.000"), (0.012, "12.000")] {
            var line: [UInt8] = []
            AccessLine.write(AccessLogEntry(method: "POST", path: "/", routeLabel: "/", status: 201, bytes: 0,
                                            duration: seconds, remoteAddress: "127.0.0.1"),
                             route: "/", nowMs: 0, into: &line)
            XCTAssertTrue(String(decoding: line, as: UTF8.self).contains(#""durationMs":\#(text),"#), "\(seconds)")
        }
    }

    /// Long paths (whose worst-case escaped size does not fit the stack buffer) are written
    /// the same, with and without characters to escape.
    func testLongPathsAreWrittenTheSame() {
        for path in ["/v1/households/" + String(repeating: "a", count: 300), "/v1/" + String(repeating: "\"\u{1}\\é", count: 90),
                     "/v1/" + String(repeating: "b", count: 150) + "\u{1f}", String(repeating: "/x", count: 200)] {
            let entry = AccessLogEntry(method: "GET", path: path, routeLabel: nil, status: 404, bytes: 7, duration: 0.001,
                                       remoteAddress: "127.0.0.1")
            var out: [UInt8] = []
            AccessLine.write(entry, route: "not_found", nowMs: 0, into: &out)
            var expected = Array(#"{"ts":"1970-01-01T00:00:00.000Z","event":"request","method":"GET","path":"#.utf8)
            JSONValue.writeString(path, into: &expected)
            expected += Array(#","route":"not_found","status":404,"bytes":7,"durationMs":1.000,"remote":"127.0.0.1"}"#.utf8) + [10]
            XCTAssertEqual(String(decoding: out, as: UTF8.self), String(decoding: expected, as: UTF8.self))
        }
    }

    /// Counting by route index gives the same metrics as by label alone, whatever indices
    /// arrive (a label seen under another index, unknown, negative or huge indices).
    func testRouteIndicesCountAsTheirLabels() {
        let byLabel = Metrics(), byIndex = Metrics()
        let answers: [(String, Int?, String, Int)] = [
            ("/v1/a", 3, "GET", 200), ("/v1/b", 1, "POST", 201), ("/v1/a", 3, "GET", 200), ("/v1/a", 4, "HEAD", 200),
            ("/v1/b", 3, "GET", 404), ("/v1/a", 3, "GET", 500), ("not_found", nil, "GET", 404), ("/v1/c", -1, "PUT", 200),
            ("/v1/c", 5000, "PUT", 200), ("/v1/b", 1, "POST", 201), ("/v1/a", 1, "GET", 200), ("/v1/b", 1, "POST", 422),
        ]
        for (i, (route, index, method, status)) in answers.enumerated() {
            byLabel.record(route: route, method: method, status: status, seconds: Double(i) / 1000)
            byIndex.record(route: route, routeIndex: index, method: method, status: status, seconds: Double(i) / 1000)
        }
        XCTAssertEqual(byIndex.render(openConnections: 1, parkedPolls: 0), byLabel.render(openConnections: 1, parkedPolls: 0))
        XCTAssertTrue(byIndex.render(openConnections: 1, parkedPolls: 0)
            .contains(#"kidledger_http_requests_total{route="/v1/a",method="GET",status="200"} 3"#))
    }

    func testHistogramBucketsAreCumulative() {
        let m = Metrics()
        for s in [0.0004, 0.003, 0.003, 100] { m.record(route: "/healthz", method: "GET", status: 200, seconds: s) }
        m.record(route: "/healthz", method: "HEAD", status: 200, seconds: 0.0005)
        let text = m.render(openConnections: 0, parkedPolls: 0)
        for (le, n) in [("0.0005", 2), ("0.001", 2), ("0.0025", 2), ("0.005", 4), ("60.0", 4), ("+Inf", 5)] {
            XCTAssertTrue(text.contains(#"kidledger_http_request_duration_seconds_bucket{route="/healthz",le="\#(le)"} \#(n)"# + "\n"), le)
        }
        XCTAssertTrue(text.contains(#"kidledger_http_request_duration_seconds_count{route="/healthz"} 5"#))
        XCTAssertTrue(text.contains(#"kidledger_http_requests_total{route="/healthz",method="GET",status="200"} 4"#))
        XCTAssertTrue(text.contains(#"kidledger_http_requests_total{route="/healthz",method="HEAD",status="200"} 1"#))
    }
}

final class RouterMatchTests: XCTestCase {
    func router() -> Router {
        var r = Router()
        for (method, template) in [("GET", "/healthz"), ("GET", "/v1/households/{id}/children"),
                                   ("POST", "/v1/households/{id}/children"), ("GET", "/v1/households/{id}/children/{childId}"),
                                   ("DELETE", "/v1/tokens/{tokenId}"), ("GET", "/v1/me")] {
            r.add(method, template, runs: .short) { _ in .response(HTTPResponse(status: 204)) }
        }
        return r
    }

    func testLiteralsParametersAndMethods() {
        let r = router()
        guard case .found(let route, let params) = r.match(method: "GET", path: "/v1/households/h%2F1/children/c1") else {
            return XCTFail("no match")
        }
        XCTAssertEqual(route.template, "/v1/households/{id}/children/{childId}")
        XCTAssertEqual(params.all, ["id": "h/1", "childId": "c1"])
        guard case .found(let head, let none) = r.match(method: "HEAD", path: "/healthz") else { return XCTFail("HEAD") }
        XCTAssertEqual(head.template, "/healthz")
        XCTAssertEqual(none.all, [:])
        guard case .found(let post, _) = r.match(method: "POST", path: "/v1/households/h/children") else { return XCTFail("POST") }
        XCTAssertEqual(post.method, "POST")
        guard case .methodNotAllowed(let allowed) = r.match(method: "PUT", path: "/v1/households/h/children") else {
            return XCTFail("405")
        }
        XCTAssertEqual(allowed, ["GET", "POST", "HEAD"])
        for path in ["/v1/households//children", "/v1/households/h/childrem", "/v1/households/h/children/", "/healthz/",
                     "/v1/mf", "/", "", "/v1/households/h/children/c/x/y/z/w", "/V1/me"] {
            guard case .notFound = r.match(method: "GET", path: path) else { return XCTFail(path) }
        }
    }

    /// Parameters are read from the path when asked: decoded as before (escapes decoded, a
    /// malformed escape left as written), ids parsed in any case and through escapes.
    func testParametersReadFromThePath() {
        let r = router()
        let id = "3f0a9db7-21c5-4f2a-9b1e-0c7d3a1e2b44"
        let cases: [(path: String, household: String, child: String, householdId: String?, childId: String?)] = [
            ("/v1/households/\(id)/children/\(id)", id, id, id, id),
            ("/v1/households/\(id.uppercased())/children/c%C3%A9", id.uppercased(), "cé", id, nil),
            ("/v1/households/3f0a9db7%2D21c5-4f2a-9b1e-0c7d3a1e2b44/children/%zz", id, "%zz", id, nil),
            ("/v1/households/\(id)x/children/%33f0a9db7-21c5-4f2a-9b1e-0c7d3a1e2b44", id + "x", id, nil, id),
            ("/v1/households/3f0a9db7-21c5-4f2a-9b1e-0c7d3a1e2b4%/children/-", "3f0a9db7-21c5-4f2a-9b1e-0c7d3a1e2b4%", "-", nil, nil),
            ("/v1/households/3f0a9db7_21c5-4f2a-9b1e-0c7d3a1e2b44/children/\(id)%00", "3f0a9db7_21c5-4f2a-9b1e-0c7d3a1e2b44",
             id + "\u{0}", nil, nil),
        ]
        for c in cases {
            guard case .found(let route, let params) = r.match(method: "GET", path: c.path) else { return XCTFail(c.path) }
            XCTAssertEqual(route.template, "/v1/households/{id}/children/{childId}")
            XCTAssertEqual(params["id"], c.household, c.path)
            XCTAssertEqual(params["childId"], c.child, c.path)
            XCTAssertEqual(params.uuid("id")?.uuidString.lowercased(), c.householdId, c.path)
            XCTAssertEqual(params.uuid("childId")?.uuidString.lowercased(), c.childId, c.path)
            // The same as parsing the decoded parameter.
            XCTAssertEqual(params.uuid("id"), params["id"].flatMap { LedgerIDs.parse($0) }, c.path)
            XCTAssertEqual(params.lowercaseID("id"), c.householdId, c.path)
            XCTAssertEqual(params.lowercaseID("childId"), c.childId, c.path)
            XCTAssertNil(params["txId"])
            XCTAssertNil(params.uuid("txId"))
            XCTAssertNil(params.lowercaseID("txId"))
        }
        guard case .found(_, let one) = r.match(method: "DELETE", path: "/v1/tokens/\(id)") else { return XCTFail("DELETE") }
        XCTAssertEqual(one.all, ["tokenId": id])
        XCTAssertEqual(one.uuid("tokenId")?.uuidString.lowercased(), id)
        XCTAssertNil(one["id"])
    }
}
