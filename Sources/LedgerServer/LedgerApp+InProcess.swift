import HTTPServer
import Synchronization

extension LedgerApp {
    /// Readies the app to answer in this process (`answer`), without listening.
    package func startInProcess() {
        startServices()
    }

    /// Answers `request` in this process, without a socket (tests' router mode): its head is
    /// screened as a connection would screen it (a refusal is the answer), then it is routed
    /// and handled; `answer` gets the response on whichever thread makes it. What only the
    /// HTTP layer does — body limits, content coding, HEAD, the connection's headers, the
    /// access log — is not done.
    package func answer(_ request: HTTPRequest, _ answer: @escaping @Sendable (HTTPResponse) -> Void) {
        let responder = InProcessResponder(answer)
        guard !request.body.isEmpty else { return handler.handle(request, responder: responder) }
        let head = HTTPRequestHead(method: request.method, target: request.target, minorVersion: request.minorVersion,
                                   headers: request.headers, framing: .length(request.body.count), keepAlive: true,
                                   expectContinue: false, headLength: 0)
        admit(request, handler.screen(head, remoteAddress: request.remoteAddress), responder)
    }

    /// Handles `request` when its head's screening lets the body be read (a verdict given
    /// off the loop too), else answers the refusal.
    private func admit(_ request: HTTPRequest, _ admission: BodyAdmission, _ responder: InProcessResponder) {
        switch admission {
        case .refuse(let refusal): responder.respond(refusal)
        case .read: handler.handle(request, responder: responder)
        case .later(let decide): decide { verdict in self.admit(request, verdict, responder) }
        }
    }
}

/// A responder without a connection: the first response is the answer; work handed to the
/// connection's thread runs at once.
private final class InProcessResponder: HTTPResponder {
    private let answer: @Sendable (HTTPResponse) -> Void
    private let answered = Atomic<Bool>(false)

    init(_ answer: @escaping @Sendable (HTTPResponse) -> Void) { self.answer = answer }

    func respond(_ response: consuming HTTPResponse) {
        guard !answered.exchange(true, ordering: .acquiringAndReleasing) else { return }
        answer(response)
    }

    var isClosed: Bool { false }
}
