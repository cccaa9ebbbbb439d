import Dispatch
import HTTPServer
import LedgerModel
import SQLiteKit

/// One `GET …/changes` request, answered at once or parked as a long-poll.
///
/// States: `read` → answered (something new, `wait` is 0, or the wait ran out) or
/// `parked` in the `ChangeNotifier`. A parked pull holds no thread: it is a waiter entry
/// and a timer. Whatever wakes it — a commit that touched the household (a change, a
/// participant's access revoked, the household deleted), its token revoked, the wait
/// running out, server shutdown — it is read again on the read pool, which checks its
/// token and access again: a revoked token is 401, revoked access 403 `access_revoked`, a
/// deleted household 404. Otherwise it answers, or parks again for the rest of its wait.
final class ChangePull: @unchecked Sendable {
    private let ctx: RequestContext
    private let caller: Caller
    private let household: String
    private let since: String?
    private let limit: Int
    private let deadline: DispatchTime

    init(ctx: RequestContext, caller: Caller, household: String, since: String?, limit: Int, wait: Int) {
        self.ctx = ctx
        self.caller = caller
        self.household = household
        self.since = since
        self.limit = limit
        self.deadline = .now() + .seconds(wait)
    }

    /// Reads the first page on the calling (read pool) thread; answers now or parks.
    func start() throws -> Reply {
        let page = try read()
        if page.hasNews || remaining() <= 0 { finish(page) } else { park(page) }
        return .pending
    }

    /// Reads the page (which checks access in its own snapshot), then checks the token in a
    /// snapshot at least as new: a token revoked before anything on the page was written is
    /// seen revoked, so nothing written after a revocation goes out under that token. A
    /// revoked token is 401 also when the feed refused (403, 404).
    private func read() throws -> ChangeFeed.Page {
        try ctx.services.reads.with { db in
            let page: ChangeFeed.Page
            do {
                page = try ChangeFeed.read(db, household: household, account: caller.accountId, since: since, limit: limit)
            } catch {
                try requireLiveToken(db)
                throw error
            }
            try requireLiveToken(db)
            return page
        }
    }

    private func tokenIsLive(_ db: SQLiteConnection) throws -> Bool {
        try db.queryOne("SELECT 1 FROM tokens WHERE id = ? AND revoked_at IS NULL", [.text(caller.tokenId)]) != nil
    }

    private func requireLiveToken(_ db: SQLiteConnection) throws {
        guard try tokenIsLive(db) else { throw APIError.unauthenticated("The token was revoked.") }
    }

    private func remaining() -> Double {
        let now = DispatchTime.now().uptimeNanoseconds, end = deadline.uptimeNanoseconds
        return end > now ? Double(end - now) / 1e9 : 0
    }

    /// Answers with `page` once the device's pull is recorded (sync status then shows it).
    private func finish(_ page: ChangeFeed.Page) {
        var h = HTTPHeaders()
        h.set("Content-Type", "application/json; charset=utf-8")
        let response = HTTPResponse(status: 200, headers: h, body: page.body)
        DeviceSync.recordPull(ctx.services.writer, token: caller.tokenId, household: household,
                              seq: page.nextToken.seq) { [ctx] in ctx.respond(response) }
    }

    private func park(_ page: ChangeFeed.Page) {
        let notifier = ctx.services.notifier
        let id = notifier.register(household: household, token: caller.tokenId, seconds: remaining()) { [self] timedOut in
            ctx.services.reads.queue.async { self.woken(timedOut: timedOut) }
        }
        guard let id else {
            // Shutting down: the page was just read, with the token and access checked.
            finish(page)
            return
        }
        if missedWake(page), notifier.cancel(household: household, id: id) { woken(timedOut: false) }
    }

    /// Whether something that wakes a waiter happened between the read and the
    /// registration (its wake-up went to nobody): a commit to the household, the household
    /// deleted, the caller's access or the token revoked.
    private func missedWake(_ page: ChangeFeed.Page) -> Bool {
        let current = try? ctx.services.reads.with { db -> Bool in
            guard let head = try db.queryOne("SELECT seq, incarnation FROM households WHERE id = ?", [.text(household)]),
                  head.int(0) == page.nextToken.seq, head.int(1) == page.nextToken.incarnation,
                  try tokenIsLive(db) else { return false }
            _ = try Access.check(db, household: household, account: caller.accountId, need: .read)
            return true
        }
        return current != true
    }

    private func woken(timedOut: Bool) {
        do {
            let page = try read()
            if page.hasNews || timedOut || remaining() <= 0.001 { finish(page) } else { park(page) }
        } catch {
            ctx.respond(error)
        }
    }
}
