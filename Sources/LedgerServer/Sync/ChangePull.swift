import Dispatch
import HTTPServer
import LedgerCore
import LedgerModel

/// One `GET …/changes` request, answered at once or parked as a long-poll.
///
/// States: `read` → answered (something new, `wait` is 0, or the wait ran out) or
/// `parked` in the `ChangeNotifier`. A parked pull holds no thread: it is a waiter entry
/// and a timer. Whatever wakes it — a commit that touched the household (a change, a
/// participant's access revoked, the household deleted), its token revoked, the wait
/// running out, server shutdown — it is read again through the storage seam on a worker
/// thread, which checks its token and access again: a revoked token is 401, revoked access
/// 403 `access_revoked`, a deleted household 404. Otherwise it answers, or parks again for
/// the rest of its wait.
final class ChangePull: @unchecked Sendable {
    private let ctx: RequestContext
    private let caller: Caller
    private let household: String
    /// The child of a child's feed (`GET …/children/{childId}/changes`); nil: the household's.
    private let child: String?
    private let since: SyncPosition?
    private let limit: Int
    private let deadline: DispatchTime

    init(ctx: RequestContext, caller: Caller, household: String, child: String? = nil, since: SyncPosition?, limit: Int,
         wait: Int) {
        self.ctx = ctx
        self.child = child
        self.caller = caller
        self.household = household
        self.since = since
        self.limit = limit
        self.deadline = .now() + .seconds(wait)
    }

    /// Reads the first page on the calling (worker) thread; answers now or parks.
    func start() throws -> Reply {
        let page = try read()
        if hasNews(page) || remaining() <= 0 { finish(page) } else { park(page) }
        return .pending
    }

    /// Reads the page and checks the token in the same snapshot (see
    /// `LedgerReading.feedPage(household:caller:since:limit:)`).
    private func read() throws -> FeedPage {
        let page = try ctx.read { r in
            if let child {
                try r.childFeedPage(household: household, child: child, checking: caller, since: since, limit: limit)
            } else {
                try r.feedPage(household: household, caller: caller, since: since, limit: limit)
            }
        }
        if let database = page.next.database { ctx.services.cursors.observe(database: database) }
        return page
    }

    /// Whether the page is worth answering before the wait ends. A child's feed waits on
    /// through changes to the rest of the household (its position moves on all the same).
    private func hasNews(_ page: FeedPage) -> Bool {
        guard child != nil else { return page.hasNews }
        return since == nil || page.records > 0 || page.moreComing
    }

    private func remaining() -> Double {
        let now = DispatchTime.now().uptimeNanoseconds, end = deadline.uptimeNanoseconds
        return end > now ? Double(end - now) / 1e9 : 0
    }

    /// Answers with `page` once the device's pull is recorded (sync status then shows it);
    /// a pull whose record failed is answered all the same.
    private func finish(_ page: FeedPage) {
        var h = HTTPHeaders()
        h.set("Content-Type", "application/json; charset=utf-8")
        let response = HTTPResponse(status: 200, headers: h, body: page.body)
        // A child's device is no member's device: sync status does not list it.
        if caller.isChild {
            ctx.respond(response)
            return
        }
        let token = caller.tokenId, household = household, seq = page.next.seq
        ctx.services.storage.write({ w in try w.recordPull(token: token, household: household, seq: seq, at: Timestamp.nowMs()) },
                                   completion: { [ctx] _ in ctx.respond(response) })
    }

    private func park(_ page: FeedPage) {
        let notifier = ctx.services.notifier
        let id = notifier.register(household: household, token: caller.tokenId, seconds: remaining()) { [self] timedOut in
            ctx.services.workers.async { self.woken(timedOut: timedOut) }
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
    private func missedWake(_ page: FeedPage) -> Bool {
        let current = try? ctx.read { r in try r.pollIsCurrent(household: household, caller: caller, position: page.next) }
        return current != true
    }

    private func woken(timedOut: Bool) {
        do {
            let page = try read()
            if hasNews(page) || timedOut || remaining() <= 0.001 { finish(page) } else { park(page) }
        } catch {
            ctx.respond(error)
        }
    }
}
