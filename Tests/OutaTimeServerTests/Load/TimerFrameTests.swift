import Foundation
import Testing
@testable import outatime_load

/// The timers scenario's frame classification: the scans for the frames
/// that come by the million (ticks, events, add and start replies) and the
/// full parse for everything else. The texts are the server's own frames.
@Suite("outatime-load timer frame classification")
struct TimerFrameTests {
    private func classify(_ text: String, readingTicks: Bool = true) -> TimerFrame {
        Array(text.utf8).withUnsafeBytes { TimerFrame.classify($0, readingTicks: readingTicks) }
    }

    private static let tick = #"{"type":"tick","channel":"timers/x","data":{"timers":[{"id":1,"remaining_s":99},{"remaining_s":42,"id":4}],"at":"2026-11-25T11:58:36.271Z"}}"#

    @Test("a tick gives its entries in order, whatever the key order, and its second")
    func tick() {
        guard case .tick(let entries, let at) = classify(Self.tick) else {
            Issue.record("not a tick")
            return
        }
        #expect(entries.map(\.id) == [1, 4] && entries.map(\.remaining) == [99, 42])
        #expect(at == 1_795_607_916.271)
    }

    @Test("a viewer's tick is recognised without reading its entries")
    func tickNotRead() {
        guard case .tickNotRead = classify(Self.tick, readingTicks: false) else {
            Issue.record("expected tickNotRead")
            return
        }
    }

    @Test("timer_started gives id and remaining time; other events are nothing to act on")
    func events() {
        guard case .started(4, 600) = classify(#"{"type":"event","channel":"timers/x","seq":2,"event":"timer_started","data":{"remaining_s":600,"id":4},"at":"2026-11-25T11:58:35Z"}"#),
              case .other = classify(#"{"type":"event","channel":"timers/x","seq":1,"event":"timer_added","data":{"timer":{"id":1,"location":"","viewers":0,"remaining_s":100,"status":"stopped","event":"e"}},"at":"2026-11-25T11:58:35Z"}"#),
              // Another key order takes the full parse, with the same answer.
              case .started(5, 7) = classify(#"{"channel":"timers/x","type":"event","event":"timer_started","data":{"id":5,"remaining_s":7}}"#) else {
            Issue.record("events misread")
            return
        }
    }

    @Test("add and start replies give the timer id, in any key order of the result")
    func timerReplies() {
        guard case .reply(3, 1, nil) = classify(#"{"type":"reply","id":3,"ok":true,"result":{"location":"","id":1,"event":"e \"quoted\" {id}","viewers":0,"status":"stopped","remaining_s":100}}"#),
              case .reply(4, 2, nil) = classify(#"{"type":"reply","id":4,"ok":true,"result":{"id":2,"event":"e","location":"","remaining_s":100,"status":"running","viewers":1}}"#),
              case .reply(9, 6, nil) = classify(#"{"id":9,"ok":true,"type":"reply","result":{"id":6}}"#) else {
            Issue.record("timer replies misread")
            return
        }
    }

    @Test("a reply with a nested result (a subscribe snapshot) is ok with no timer id; a refusal carries its error")
    func otherReplies() {
        guard case .reply(2, nil, nil) = classify(#"{"type":"reply","id":2,"ok":true,"result":{"channel":"timers/x","kind":"timers","seq":1,"watchers":[{"session":"a","name":"p"}],"state":{"timers":[{"id":1,"remaining_s":5}]},"watcher_count":1}}"#),
              case .reply(1, nil, nil) = classify(#"{"type":"reply","id":1,"ok":true,"result":{"server":"outatime/0.1.0","protocol":1,"session":"83j3v8-1","role":"operate","heartbeat_ms":15000,"max_frame":65536}}"#),
              case .reply(5, nil, "not_subscribed: subscribe first") = classify(#"{"type":"reply","id":5,"ok":false,"error":{"code":"not_subscribed","message":"subscribe first"}}"#) else {
            Issue.record("replies misread")
            return
        }
    }

    @Test("bye, error pushes and unreadable frames are failures")
    func failures() {
        guard case .failure(let bye) = classify(#"{"type":"bye","reason":"idle_timeout"}"#),
              case .failure = classify(#"{"type":"error","error":{"code":"bad_json","message":"x"}}"#),
              case .failure = classify("not json") else {
            Issue.record("expected failures")
            return
        }
        #expect(bye.contains("idle_timeout"))
    }

    @Test("the hello result's heartbeat_ms is found by its key")
    func heartbeat() {
        let body = Array(#"{"type":"reply","id":1,"ok":true,"result":{"role":"operate","heartbeat_ms":15000,"max_frame":65536}}"#.utf8)
        let value = body.withUnsafeBytes { WireBytes.int(after: Array(#""heartbeat_ms":"#.utf8), in: $0) }
        #expect(value == 15_000)
    }
}
