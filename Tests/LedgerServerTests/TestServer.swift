import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LedgerModel
@testable import LedgerServer
import XCTest

/// A real server on an ephemeral loopback port with a temporary data directory.
final class TestServer: @unchecked Sendable {
    let app: LedgerApp
    let dataDirectory: String
    var base: String { "http://127.0.0.1:\(app.port)" }

    init(configure: (inout LedgerAppConfiguration) -> Void = { _ in }) throws {
        dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-test-\(UUID().uuidString)").path
        var c = LedgerAppConfiguration(dataDirectory: dataDirectory, host: "127.0.0.1", port: 0)
        c.logging = false
        c.http.eventLoops = 2
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        c.openAPIPath = repo.appendingPathComponent("openapi.yaml").path
        c.publicDirectory = repo.appendingPathComponent("Public").path
        // Tests sign many accounts up from one address; the registration limit has its own tests.
        c.registrationsPerHour = 0
        configure(&c)
        app = try LedgerApp(configuration: c)
        try app.start()
    }

    func stop() {
        app.stop()
        try? FileManager.default.removeItem(atPath: dataDirectory)
    }

    struct Reply {
        let status: Int
        let headers: [String: String]
        let body: Data
        var json: JSONValue { (try? JSONValue.parse(Array(body))) ?? .null }
        var code: String? { json["code"]?.stringValue }
        func header(_ name: String) -> String? {
            headers.first { $0.key.lowercased() == name.lowercased() }?.value
        }
    }

    /// One request; `body` is sent as JSON. Blocks until the answer arrives.
    @discardableResult
    func call(_ method: String, _ path: String, token: String? = nil, json: JSONValue? = nil, rawBody: Data? = nil,
              headers: [String: String] = [:], timeout: Double = 30) -> Reply {
        TestServer.request(base: base, method, path, token: token, json: json, rawBody: rawBody, headers: headers, timeout: timeout)
    }

    static func request(base: String, _ method: String, _ path: String, token: String?, json: JSONValue?, rawBody: Data?,
                        headers: [String: String], timeout: Double) -> Reply {
        var req = URLRequest(url: URL(string: base + path)!)
        req.httpMethod = method
        req.timeoutInterval = timeout
        if let token { req.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let json {
            req.httpBody = Data(json.serialized())
            req.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        if let rawBody { req.httpBody = rawBody }
        for (k, v) in headers { req.setValue(v, forHTTPHeaderField: k) }
        let sem = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result = Reply(status: 0, headers: [:], body: Data())
        URLSession.shared.dataTask(with: req) { data, response, _ in
            if let http = response as? HTTPURLResponse {
                var h: [String: String] = [:]
                for (k, v) in http.allHeaderFields { h["\(k)"] = "\(v)" }
                result = Reply(status: http.statusCode, headers: h, body: data ?? Data())
            }
            sem.signal()
        }.resume()
        sem.wait()
        return result
    }

    /// Creates an account and returns (accountId, token secret).
    func signup(_ handle: String, name: String? = nil) -> (id: String, token: String) {
        let r = call("POST", "/v1/accounts", json: .object(["handle": .string(handle), "displayName": .string(name ?? handle)]))
        precondition(r.status == 201, "signup failed: \(r.status) \(String(decoding: r.body, as: UTF8.self))")
        return (r.json["account"]!["id"]!.stringValue!, r.json["token"]!["secret"]!.stringValue!)
    }

    func household(_ token: String, name: String = "Home") -> String {
        call("POST", "/v1/households", token: token, json: .object(["name": .string(name)])).json["id"]!.stringValue!
    }

    func child(_ token: String, household: String, name: String = "Ada") -> String {
        call("POST", "/v1/households/\(household)/children", token: token, json: .object(["name": .string(name)])).json["id"]!.stringValue!
    }
}

extension JSONValue {
    /// Builds a JSON object from pairs, for request bodies in tests.
    static func obj(_ pairs: KeyValuePairs<String, JSONValue>) -> JSONValue {
        var o = JSONObject()
        for (k, v) in pairs { o[k] = v }
        return .object(o)
    }
}
