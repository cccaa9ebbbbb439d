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
        if !request.body.isEmpty {
            let head = HTTPRequestHead(method: request.method, target: request.target, minorVersion: request.minorVersion,
                                       headers: request.headers, framing: .length(request.body.count), keepAlive: true,
                                       expectContinue: false, headLength: 0)
            if case .refuse(let refusal) = handler.screen(head, remoteAddress: request.remoteAddress) {
                return responder.respond(refusal)
            }
        }
        handler.handle(request, responder: responder)
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
