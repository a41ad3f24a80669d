import UV
#if canImport(Glibc)
import Glibc
#endif

/// The terminal taken over by a full-screen view (`watch`, `top`): keys read
/// raw from stdin, the alternate screen without a cursor on stdout, and the
/// window size kept current on SIGWINCH. ``restore(colour:)`` gives the
/// terminal back as it was; the view closes ``handles`` when it ends.
final class FullScreen {
    /// The libuv handles it holds (output, input, the SIGWINCH watcher).
    private(set) var handles: [Handle] = []
    /// The window's size, in character cells.
    private(set) var size = (columns: 80, rows: 24)
    private let output: TTY
    private let input: TTY
    private var active = true

    /// Takes the terminal over: `onKeys` gets the bytes typed, `onEnd` the
    /// end of input, `onResize` runs after the size changed. `clear` also
    /// clears the alternate screen on entry.
    init(loop: Loop, clear: Bool, onKeys: @escaping ([UInt8]) -> Void, onEnd: @escaping () -> Void,
         onResize: @escaping () -> Void) throws {
        output = try TTY(loop: loop, fd: 1)
        input = try TTY(loop: loop, fd: 0)
        handles = [output, input]
        if let size = try? output.windowSize() { self.size = size }
        let winch = Signal(loop: loop)
        handles.append(winch)
        do {
            try input.setRaw(true)
            StandardOutput.writeAll("\u{1B}[?1049h\u{1B}[?25l" + (clear ? "\u{1B}[2J" : ""))
            try input.startReading(onKeys, onEnd: { _ in onEnd() })
            try winch.start(SIGWINCH) { [unowned self] _ in
                if let size = try? output.windowSize() { self.size = size }
                onResize()
            }
        } catch {
            // Half taken over: give the terminal back and let go of the handles.
            restore(colour: false)
            for handle in handles { handle.close() }
            throw error
        }
    }

    /// Leaves the alternate screen and restores the terminal's mode; only
    /// the first call does anything.
    func restore(colour: Bool) {
        guard active else { return }
        active = false
        try? input.setRaw(false)
        TTY.resetMode()
        StandardOutput.writeAll((colour ? ANSI.reset : "") + "\u{1B}[?25h\u{1B}[?1049l")
    }

    /// True until ``restore(colour:)``.
    var isActive: Bool { active }
}
