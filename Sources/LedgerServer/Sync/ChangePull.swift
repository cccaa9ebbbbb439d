import Dispatch
import HTTPServer
import LedgerModel
import SQLiteKit

/// One `GET …/changes` request, answered at once or parked as a long-poll.
///
/// States: `read` → answered (something new, `wait` is 0, or the wait ran out) or
/// `parked` in the `ChangeNotifier`. A parked pull holds no thread: it is a waiter entry
/// and a timer. When a commit touches the household it is read again on the read pool and
/// either answered or parked again for the rest of its wait. When the wait ends it answers
/// the page it already read (empty lists, `nextToken` equal to `since`) without touching
/// the database, so server shutdown answers every parked pull promptly.
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

    private func read() throws -> ChangeFeed.Page {
        try ctx.services.reads.with { db in
            try ChangeFeed.read(db, household: household, account: caller.accountId, since: since, limit: limit)
        }
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
        let id = notifier.register(household: household, seconds: remaining()) { [self] timedOut in
            if timedOut {
                finish(page)
            } else {
                ctx.services.reads.queue.async { self.woken() }
            }
        }
        guard let id else {
            finish(page)
            return
        }
        // A commit may have landed between the read and the registration; its wake-up
        // went to nobody, so look once more.
        let head = try? ctx.services.reads.with { db in
            try db.queryOne("SELECT seq, incarnation FROM households WHERE id = ?", [.text(household)])
        }
        let moved = head.map { $0.int(0) != page.nextToken.seq || $0.int(1) != page.nextToken.incarnation } ?? true
        if moved, notifier.cancel(household: household, id: id) { woken() }
    }

    private func woken() {
        do {
            let page = try read()
            if page.hasNews || remaining() <= 0.001 { finish(page) } else { park(page) }
        } catch {
            ctx.respond(error)
        }
    }
}
