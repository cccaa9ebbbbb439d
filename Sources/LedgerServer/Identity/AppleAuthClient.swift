import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LedgerCore
import LedgerModel
import StoreKitJWS
import Synchronization

/// Sign in with Apple's token endpoints, as the app's server calls them: `/auth/token`
/// exchanges an authorization code for a refresh token, `/auth/revoke` revokes one. Each
/// call authenticates with a client secret, an ES256 JWT signed with the app's Sign in
/// with Apple key (team id, key id, `.p8`).
///
/// Calls block the calling thread (never an event loop: the exchange and the revocation
/// outbox run on threads of their own) for at most ``timeout`` seconds.
final class AppleAuthClient: Sendable {
    /// Apple's audience for client secrets.
    static let audience = "https://appleid.apple.com"
    /// Lifetime of a client secret, in seconds (Apple allows up to six months; each is used
    /// once, right after it is made).
    static let secretLifetime: TimeInterval = 300

    let baseURL: URL
    let teamId: String
    let keyId: String
    /// The longest a call may take, in seconds (default 10).
    let timeout: TimeInterval
    private let signer: ES256Signer
    private let session: URLSession

    /// - Parameters:
    ///   - baseURL: `https://appleid.apple.com`, or a stand-in's.
    ///   - privateKeyPath: the `.p8` file (PKCS#8 PEM of a P-256 key).
    init(baseURL: URL, teamId: String, keyId: String, privateKeyPath: String, timeout: TimeInterval = 10) throws {
        self.baseURL = baseURL
        self.teamId = teamId
        self.keyId = keyId
        self.timeout = timeout
        do {
            signer = try ES256Signer(privateKeyPath: privateKeyPath)
        } catch {
            throw TokenSealerError("--apple-private-key \(privateKeyPath): \(error) (expected the .p8 file of a Sign in with Apple key)")
        }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.timeoutIntervalForResource = timeout
        configuration.httpCookieStorage = nil
        configuration.urlCache = nil
        session = URLSession(configuration: configuration)
    }

    deinit { session.finishTasksAndInvalidate() }

    /// A client secret for `clientId`: `{iss: team id, iat, exp, aud: Apple, sub: client id}`
    /// with `kid` in the header.
    func clientSecret(clientId: String, now: Date = Date()) throws -> String {
        let iat = Int64(now.timeIntervalSince1970)
        let header: JSONValue = .object(["alg": "ES256", "kid": .string(keyId)])
        let claims: JSONValue = .object(["iss": .string(teamId), "iat": .int(iat), "exp": .int(iat + Int64(Self.secretLifetime)),
                                         "aud": .string(Self.audience), "sub": .string(clientId)])
        return try signer.sign(headerJSON: header.serialized(), payloadJSON: claims.serialized())
    }

    /// What one call came to.
    enum Outcome: Sendable, Equatable {
        /// 200: the answer's JSON object.
        case ok(JSONObject)
        /// Apple answered with an error (`error` of its JSON, or the status).
        case refused(status: Int, error: String)
        /// No answer (unreachable, timed out).
        case unreachable(String)
    }

    /// `POST /auth/token` with `grant_type=authorization_code`: on success the answer holds
    /// `refresh_token`.
    func exchange(code: String, clientId: String) -> Outcome {
        post("/auth/token", clientId: clientId, ["code": code, "grant_type": "authorization_code"])
    }

    /// `POST /auth/revoke` of a refresh token.
    func revoke(refreshToken: String, clientId: String) -> Outcome {
        post("/auth/revoke", clientId: clientId, ["token": refreshToken, "token_type_hint": "refresh_token"])
    }

    /// `POST path` of `fields` with the client's id and a client secret made for it.
    private func post(_ path: String, clientId: String, _ fields: [String: String]) -> Outcome {
        let secret: String
        do { secret = try clientSecret(clientId: clientId) } catch { return .refused(status: 0, error: "client secret: \(error)") }
        return post(path, fields.merging(["client_id": clientId, "client_secret": secret]) { own, _ in own })
    }

    /// `application/x-www-form-urlencoded` (RFC 6749 appendix B), members in key order.
    static func form(_ fields: [String: String]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._*")
        return fields.keys.sorted().map { key in
            let value = fields[key]!
            let encode = { (s: String) in
                s.unicodeScalars.map { c -> String in
                    if c.isASCII, allowed.contains(c) { return String(c) }
                    if c == " " { return "+" }
                    return String(c).utf8.map { String(format: "%%%02X", $0) }.joined()
                }.joined()
            }
            return encode(key) + "=" + encode(value)
        }.joined(separator: "&")
    }

    private func post(_ path: String, _ fields: [String: String]) -> Outcome {
        let url = baseURL.appendingPathComponent(String(path.dropFirst()))
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout)
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        request.httpBody = Data(Self.form(fields).utf8)
        let outcome = Mutex<Outcome?>(nil)
        let done = DispatchSemaphore(value: 0)
        let task = session.dataTask(with: request) { data, response, error in
            let result: Outcome
            if let http = response as? HTTPURLResponse {
                let object = data.flatMap { try? JSONValue.parse(Array($0)) }?.objectValue
                if http.statusCode == 200 {
                    result = .ok(object ?? JSONObject())
                } else {
                    result = .refused(status: http.statusCode, error: object?["error"]?.stringValue ?? "HTTP \(http.statusCode)")
                }
            } else {
                result = .unreachable(error?.localizedDescription ?? "no response")
            }
            outcome.withLock { $0 = result }
            done.signal()
        }
        task.resume()
        if done.wait(timeout: .now() + timeout + 1) == .timedOut {
            task.cancel()
            return .unreachable("no answer within \(Int(timeout)) s")
        }
        return outcome.withLock { $0 } ?? .unreachable("no response")
    }
}
