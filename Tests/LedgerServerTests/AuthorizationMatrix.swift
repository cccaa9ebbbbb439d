import Foundation
import LedgerModel
import LedgerServerTesting

/// The authorization matrix: every endpoint of `openapi.yaml` × every kind of caller →
/// the expected status (and, where it matters, the problem `code`). `AuthorizationTests`
/// asserts it over HTTP and renders it into `docs/authorization.md`.
enum AuthorizationMatrix {
    /// Who calls.
    enum Caller: String, CaseIterable {
        case noToken, revokedToken, stranger, invitee, declined, readOnly, readWrite, revoked, departed, owner, child, otherChild

        var title: String {
            switch self {
            case .noToken: return "no token"
            case .revokedToken: return "revoked token"
            case .stranger: return "stranger"
            case .invitee: return "invitee (not accepted)"
            case .declined: return "declined"
            case .readOnly: return "read-only"
            case .readWrite: return "read-write"
            case .revoked: return "revoked"
            case .departed: return "departed"
            case .owner: return "owner"
            case .child: return "child device"
            case .otherChild: return "another child's device"
            }
        }
    }

    /// One expected answer: a status and optionally the problem `code`.
    struct Expect: Equatable {
        var status: Int
        var code: String?

        /// "403:owner_only" or "200".
        init(_ spec: String) {
            let parts = spec.split(separator: ":", maxSplits: 1)
            status = Int(parts[0]) ?? 0
            code = parts.count > 1 ? String(parts[1]) : nil
        }

        var text: String { code.map { "\(status) `\($0)`" } ?? String(status) }
    }

    /// One endpoint: its expectations per caller, and a request body. Strings in the body
    /// may be `$unique` (a fresh handle), `$strangerHandle`, `$readWriteId`, `$uuid` (a fresh
    /// UUID), `$pot` (the world's pot) or `$mainPot` (its child's default pot).
    struct Row {
        var method: String
        var path: String
        var expect: [Caller: Expect]
        var body: JSONValue?
        /// Whether a successful call changes the relationships the matrix relies on; such
        /// cells each run against a fresh household.
        var mutates: Bool
        var note: String
    }

    static let callers = Caller.allCases

    /// Ten space-separated specs in `Caller.allCases` order (the accounts' callers), then
    /// the two child devices' (`child`: the device of the path's child, then a device of
    /// another child of the same household). Without `child`: the same as everyone for a
    /// route that reads no token; else 404 `not_found` for a read and 403 `read_only` for a
    /// write (`ChildAccess.none`).
    static func row(_ method: String, _ path: String, _ specs: String, child: String? = nil, body: JSONValue? = nil,
                    mutates: Bool? = nil, note: String = "") -> Row {
        var parts = specs.split(separator: " ").map(String.init)
        precondition(parts.count == 10, "\(method) \(path): \(parts.count) specs")
        let open = Set(parts).count == 1
        parts += (child ?? (open ? "\(parts[0]) \(parts[0])" : method == "GET" ? "404:not_found 404:not_found"
                            : "403:read_only 403:read_only")).split(separator: " ").map(String.init)
        precondition(parts.count == callers.count, "\(method) \(path): \(parts.count) specs")
        var e: [Caller: Expect] = [:]
        for (c, p) in zip(callers, parts) { e[c] = Expect(p) }
        return Row(method: method, path: path, expect: e, body: body, mutates: mutates ?? (method != "GET"), note: note)
    }

    static let unauth = "401:unauthenticated 401:unauthenticated"
    static let outsiders = "404:not_found 404:not_found 404:not_found"
    static let gone = "403:access_revoked 403:access_revoked"

    /// Members read: owner and accepted participants.
    static func memberRead(_ s: String = "200") -> String { "\(unauth) \(outsiders) \(s) \(s) \(gone) \(s)" }
    /// Read-write members write; read-only participants get `read_only`.
    static func memberWrite(_ s: String) -> String { "\(unauth) \(outsiders) 403:read_only \(s) \(gone) \(s)" }
    /// Owner only; participants get `owner_only`.
    static func ownerOnly(_ s: String) -> String { "\(unauth) \(outsiders) 403:owner_only 403:owner_only \(gone) \(s)" }
    /// Any valid token.
    static func anyToken(_ s: String) -> String { unauth + String(repeating: " " + s, count: 8) }
    /// No authentication at all.
    static func open(_ s: String) -> String { Array(repeating: s, count: 10).joined(separator: " ") }

    static let hh = "/v1/households/{id}"

    static let rows: [Row] = [
        row("POST", "/v1/accounts", open("201"), body: .obj(["handle": "$unique", "displayName": "New parent"]), mutates: false,
            note: "Registration is open; no token is read."),
        row("GET", "/v1/me", anyToken("200")),
        row("DELETE", "/v1/me", anyToken("422:confirmation_mismatch"), body: .obj(["confirmHandle": "not-the-callers-handle"]),
            mutates: false, note: "Authorization only: the body names no caller's handle (deletions: `AccountDeletionTests`)."),
        row("POST", "/v1/me/recovery-codes", anyToken("201"), mutates: false, note: "Each caller's own codes."),
        row("GET", "/v1/me/recovery-codes", anyToken("200")),
        row("POST", "/v1/accounts/recover", open("401:recovery_failed"), body: .obj(["handle": "$unique", "code": "0000-0000-0000-0000"]),
            mutates: false, note: "No token is read; a handle no account has gets the one failure answer."),
        row("POST", "/v1/link-codes", anyToken("201"), mutates: false, note: "A code of the caller's own account."),
        row("POST", "/v1/link-codes/redeem", open("404:link_code_invalid"), body: .obj(["code": "0000-0000-0000"]), mutates: false,
            note: "No token is read; an unknown code."),
        row("POST", "/v1/tokens", anyToken("201"), body: .obj(["deviceName": "Phone"]), mutates: false),
        row("GET", "/v1/tokens", anyToken("200")),
        row("DELETE", "/v1/tokens/{tokenId}", "\(unauth) 404:not_found 404:not_found 404:not_found 404:not_found 404:not_found 404:not_found 404:not_found 204",
            note: "`tokenId` is one of the owner's tokens: other accounts cannot see it."),
        row("PUT", "/v1/tokens/{tokenId}/push", "\(unauth) 404:not_found 404:not_found 404:not_found 404:not_found 404:not_found 404:not_found 404:not_found 204",
            child: "404:not_found 404:not_found",
            body: .obj(["appId": "com.example.kidledger", "pushKey": .string(String(repeating: "ab", count: 32))]), mutates: false,
            note: "`tokenId` is one of the owner's tokens: another account's is the same 404 as an unknown one. A child's device "
                + "registers only its own token (`PushTests.testAChildDeviceRegistersOnlyItsOwnToken`): the owner's is 404 to it."),
        row("DELETE", "/v1/tokens/{tokenId}/push", "\(unauth) 404:not_found 404:not_found 404:not_found 404:not_found 404:not_found 404:not_found 404:not_found 204",
            child: "404:not_found 404:not_found", mutates: false, note: "As `PUT`."),
        row("POST", "/v1/auth/{provider}", open("200"), body: .obj(["idToken": "$ownerIdToken"]), mutates: false,
            note: "No token is read: the ID token authenticates. `provider` is configured; the token is the owner's linked identity's."),
        row("GET", "/v1/me/identities", anyToken("200"), note: "Each caller sees only their own identities."),
        row("POST", "/v1/me/identities", anyToken("201"), body: .obj(["provider": "test", "idToken": "$idToken"]), mutates: false,
            note: "A fresh identity each call; one linked to another account is 409 `identity_in_use`."),
        row("DELETE", "/v1/me/identities/{identityId}",
            "\(unauth) 404:not_found 404:not_found 404:not_found 404:not_found 404:not_found 404:not_found 404:not_found 204",
            note: "`identityId` is the owner's: other accounts cannot see it."),
        row("POST", "/v1/households", anyToken("201"), body: .obj(["name": "Another home"]), mutates: false),
        row("GET", "/v1/households", anyToken("200"), note: "Only owned and accepted households are listed."),
        row("PUT", hh, "\(unauth) 409:id_conflict 409:id_conflict 409:id_conflict 409:id_conflict 409:id_conflict 409:id_conflict 409:id_conflict 200",
            body: .obj(["name": "Home"]), mutates: false, note: "API.md: another account's id is 409 `id_conflict`."),
        row("GET", hh, memberRead()),
        row("PATCH", hh, memberWrite("200"), body: .obj(["name": "Renamed"])),
        row("DELETE", hh, ownerOnly("204")),
        row("POST", hh + "/children", memberWrite("201"), body: .obj(["name": "Bo"])),
        row("GET", hh + "/children", memberRead()),
        row("GET", hh + "/children/{childId}", memberRead(), child: "200 404:not_found"),
        row("PATCH", hh + "/children/{childId}", memberWrite("200"), body: .obj(["name": "Cy"])),
        row("GET", hh + "/children/{childId}/schedules", memberRead(), child: "200 404:not_found"),
        row("POST", hh + "/children/{childId}/schedules", memberWrite("201"),
            body: .obj(["kind": "allowance", "amountCents": 300, "cadence": "weekly", "firstDate": "2030-01-04",
                        "timeZone": "Europe/Zurich"])),
        row("GET", hh + "/schedules/{scheduleId}", memberRead(), child: "200 404:not_found",
            note: "The schedule is the path's child's: another child's device does not see it."),
        row("PATCH", hh + "/schedules/{scheduleId}", memberWrite("200"), body: .obj(["note": "Pocket money"])),
        row("DELETE", hh + "/schedules/{scheduleId}", memberWrite("204")),
        row("GET", hh + "/children/{childId}/pots", memberRead(), child: "200 404:not_found"),
        row("POST", hh + "/children/{childId}/pots", memberWrite("201"), body: .obj(["name": "Give"])),
        row("PATCH", hh + "/pots/{potId}", memberWrite("200"), body: .obj(["name": "Savings"])),
        row("DELETE", hh + "/pots/{potId}", memberWrite("204"), note: "An empty pot."),
        row("POST", hh + "/children/{childId}/transfers", memberWrite("201"),
            body: .obj(["id": "$uuid", "fromPotId": "$mainPot", "toPotId": "$pot", "amountCents": 100])),
        row("POST", hh + "/children/{childId}/transactions", memberWrite("201"), body: .obj(["amountCents": 250])),
        row("GET", hh + "/children/{childId}/transactions", memberRead(), child: "200 404:not_found"),
        row("GET", hh + "/transactions", memberRead()),
        row("GET", hh + "/transactions/{txId}", memberRead(), child: "200 404:not_found",
            note: "The transaction is the path's child's: another child's device does not see it."),
        row("POST", hh + "/children/{childId}/devices", memberWrite("201"), body: .obj(["deviceName": "Ada's iPad"]), mutates: false,
            note: "A link code that pairs a device for the child."),
        row("GET", hh + "/children/{childId}/devices", memberRead()),
        row("DELETE", hh + "/children/{childId}/devices/{tokenId}", memberWrite("204"),
            note: "`tokenId` is the child device's (the matrix's own child device is left alone)."),
        row("GET", hh + "/children/{childId}/requests", memberRead(), child: "200 404:not_found"),
        row("POST", hh + "/children/{childId}/requests", memberWrite("201"), child: "201 403:read_only",
            body: .obj(["kind": "spend", "amountCents": 450, "note": "A book"]), mutates: false,
            note: "A child's device asks for its own child only."),
        row("POST", hh + "/requests/{requestId}/approve", memberWrite("200"), body: .obj(["amountCents": 300]),
            note: "`requestId` is a pending request of the path's child."),
        row("POST", hh + "/requests/{requestId}/decline", memberWrite("200"), body: .obj(["note": "Not today"])),
        row("GET", hh + "/children/{childId}/changes", memberRead(), child: "200 404:not_found",
            note: "The child's feed; its positions and the household feed's refuse each other."),
        row("POST", hh + "/transactions/{txId}/reversal", memberWrite("201")),
        row("POST", hh + "/children/{childId}/undo-last", memberWrite("201")),
        row("POST", hh + "/share", ownerOnly("200"), mutates: false, note: "The share exists: 200."),
        row("GET", hh + "/share", memberRead()),
        row("DELETE", hh + "/share", ownerOnly("204")),
        row("POST", hh + "/share/participants", ownerOnly("201"), body: .obj(["handle": "$strangerHandle", "permission": "readOnly"])),
        row("PATCH", hh + "/share/participants/{accountId}", ownerOnly("200"), body: .obj(["permission": "readOnly"]),
            note: "`accountId` is the read-write participant."),
        row("DELETE", hh + "/share/participants/{accountId}",
            "\(unauth) \(outsiders) 403:owner_only 204 \(gone) 204",
            note: "`accountId` is the read-write participant: the owner revokes, the participant leaves."),
        row("POST", hh + "/owner", ownerOnly("200"), body: .obj(["accountId": "$readWriteId"]),
            note: "`accountId` is the read-write participant."),
        row("GET", "/v1/invitations", anyToken("200"), note: "Each caller sees only their own pending invitations."),
        row("POST", "/v1/invitations/{invitationId}/accept",
            "\(unauth) 404:not_found 200 404:not_found 404:not_found 404:not_found 404:not_found 404:not_found 404:not_found",
            note: "`invitationId` is the invitee's: for everyone else it does not exist."),
        row("POST", "/v1/invitations/{invitationId}/decline",
            "\(unauth) 404:not_found 204 404:not_found 404:not_found 404:not_found 404:not_found 404:not_found 404:not_found"),
        row("GET", "/v1/blocks", anyToken("200"), note: "Each caller sees only their own blocks."),
        row("DELETE", "/v1/blocks/{accountId}",
            "\(unauth) 404:not_found 404:not_found 204 404:not_found 404:not_found 404:not_found 404:not_found 404:not_found",
            note: "`accountId` is the owner, whom the declined invitee blocked: nobody else can lift (or see) that block."),
        row("GET", hh + "/changes", memberRead()),
        row("POST", hh + "/changes", memberWrite("200"), body: .obj(["children": .array([]), "transactions": .array([])]),
            mutates: false, note: "An empty batch."),
        row("GET", hh + "/sync-status", memberRead()),
        row("POST", hh + "/reconcile", memberRead(), body: .obj(["children": .array([])]), mutates: false,
            note: "Reads only: read-only members reconcile too (and find they may push nothing)."),
        row("PUT", hh + "/subscription", ownerOnly("422"), body: .obj(["signedTransaction": "not-a-jws"]),
            note: "With a bundle id configured; the owner's invalid JWS is 422 `malformed`."),
        row("GET", hh + "/subscription", ownerOnly("404:no_subscription")),
        row("DELETE", hh + "/subscription", ownerOnly("204")),
        row("GET", hh + "/entitlement", memberRead()),
        row("GET", hh + "/entitlement/token", memberRead()),
        row("GET", "/v1/entitlement-keys", open("200"), note: "The public keys that verify entitlement tokens."),
        row("POST", "/v1/app-store/notifications", open("422"), body: .obj(["signedPayload": "not-a-jws"]), mutates: false,
            note: "No token is read: the App Store's signature is the authentication; an unverifiable payload is 422."),
        row("GET", "/healthz", open("200")),
        row("GET", "/readyz", open("200")),
        row("GET", "/metrics", open("200")),
        row("GET", "/openapi.yaml", open("200")),
    ]

    /// `docs/authorization.md`, rendered from `rows`.
    static func markdown() -> String {
        var out = """
        # Authorization matrix

        Generated from `Tests/LedgerServerTests/AuthorizationMatrix.swift` by
        `KIDLEDGER_WRITE_DOCS=1 swift test --filter LedgerServerTests.AuthorizationTests`;
        the same table is asserted over HTTP by the test suite, and every endpoint of
        `openapi.yaml` must have a row.

        Callers: **no token**; **revoked token** (a signed-out device of a member);
        **stranger** (an account with no tie to the household); **invitee** (invited, not yet
        accepted); **declined**; **read-only** and **read-write** (accepted participants);
        **revoked** (access revoked by the owner); **departed** (left the share); **owner**.

        Rules: non-members get 404 `not_found` (the household's existence is not revealed);
        revoked and departed participants 403 `access_revoked`; read-only participants 403
        `read_only` on every write; owner-only operations 403 `owner_only`; invitees who have
        not accepted are not members. Missing or revoked tokens are 401 `unauthenticated`, and
        repeated authentication failures from one address are 429 `rate_limited` with
        `Retry-After`.

        Child devices (docs/children.md): **child device** is a device paired for the path's
        child, **another child's device** one paired for another child of the same household.
        A child token reads its own child (the child, its transactions, schedules, requests
        and feed) and makes requests for it; every other read is 404 `not_found`, as for a
        non-member, and every other write 403 `read_only` (404 in another household).


        """
        out += "| Method | Path | " + callers.map(\.title).joined(separator: " | ") + " | Notes |\n"
        out += "|---|---|" + callers.map { _ in "---|" }.joined() + "---|\n"
        for r in rows {
            out += "| \(r.method) | `\(r.path)` | " + callers.map { r.expect[$0]!.text }.joined(separator: " | ") + " | \(r.note) |\n"
        }
        return out
    }
}
