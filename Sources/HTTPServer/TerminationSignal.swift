import Glibc

nonisolated(unsafe) private var signalPipeWriteFD: Int32 = -1

/// Waiting for SIGTERM or SIGINT without dedicating a signal-blocked thread layout:
/// handlers write the signal number into a pipe that `wait()` reads.
public enum TerminationSignal {
    private static let readFD: Int32 = {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return -1 }
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFL, O_NONBLOCK)
        signalPipeWriteFD = fds[1]
        for sig in [SIGTERM, SIGINT] {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { number in
                var n = number
                _ = write(signalPipeWriteFD, &n, 4)
            }
            sigemptyset(&action.sa_mask)
            action.sa_flags = SA_RESTART
            sigaction(sig, &action, nil)
        }
        return fds[0]
    }()

    /// Installs the handlers (if not yet) so that SIGTERM/SIGINT no longer terminate the
    /// process; `wait()` calls this itself. Call it early to avoid a window at start-up.
    public static func install() { _ = readFD }

    /// Blocks the calling thread until SIGTERM or SIGINT arrives; returns the signal number.
    public static func wait() -> Int32 {
        let fd = readFD
        guard fd >= 0 else { return SIGTERM }
        var number: Int32 = 0
        while true {
            let n = read(fd, &number, 4)
            if n == 4 { return number }
            if n < 0 && errno == EINTR { continue }
            return SIGTERM
        }
    }
}
