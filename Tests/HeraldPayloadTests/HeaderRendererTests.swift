import HeraldCore
import HeraldPayload
import Testing

/// Per-recipient APNs headers: topic suffixes, priorities, expiration, collapse ids, apns-id.
@Suite struct HeaderRendererTests {
    static let alert = #"{"aps":{"alert":"hi"}}"#

    func renderer(_ push: PushSpec, topic: String = "com.example.app", campaign: String = "spring") throws -> HeaderRenderer {
        try HeaderRenderer(push: push, topic: topic, campaign: campaign)
    }

    func headers(_ outcome: HeaderOutcome) -> RenderedHeaders? {
        if case .headers(let h) = outcome { return h }
        return nil
    }

    func problem(_ push: PushSpec, topic: String = "com.example.app") -> String? {
        do throws(PayloadTemplateError) {
            _ = try HeaderRenderer(push: push, topic: topic, campaign: "spring")
            return nil
        } catch {
            return error.description
        }
    }

    @Test(arguments: [
        (PushType.alert, "com.example.app"), (.background, "com.example.app"), (.voip, "com.example.app.voip"),
        (.location, "com.example.app.location-query"), (.complication, "com.example.app.complication"),
        (.fileprovider, "com.example.app.pushkit.fileprovider"), (.liveactivity, "com.example.app.push-type.liveactivity"),
        (.pushtotalk, "com.example.app.voip-ptt"), (.widgets, "com.example.app.push-type.widgets"),
        (.controls, "com.example.app.push-type.controls"), (.mdm, "com.example.app"),
    ])
    func topicGetsThePushTypesSuffix(type: PushType, expected: String) throws {
        let push = PushSpec(type: type, priority: type.defaultPriority, template: Fixture.template(Self.alert))
        let r = try renderer(push)
        #expect(r.topic == expected)
        #expect(r.bundleId == "com.example.app")
        // Written with the suffix already: used as is, not doubled.
        let again = try renderer(push, topic: expected)
        #expect(again.topic == expected)
        #expect(headers(again.render(Fixture.record([:])))?.topic == expected)
    }

    @Test func topicWithAnotherTypesSuffixIsRejected() {
        let alert = PushSpec(type: .alert, priority: 10, template: Fixture.template(Self.alert))
        #expect(problem(alert, topic: "com.example.app.voip")
                == "apns.topic com.example.app.voip ends in .voip, the suffix of voip pushes; push.type alert sends to com.example.app (give the bundle id com.example.app; herald appends the suffix)")
        let voip = PushSpec(type: .voip, priority: 10, template: Fixture.template(Self.alert))
        #expect(problem(voip, topic: "com.example.app.voip-ptt")?.hasPrefix("apns.topic com.example.app.voip-ptt ends in .voip-ptt, the suffix of pushtotalk pushes") == true)
        #expect(problem(alert, topic: "com.example app") == "apns.topic must not contain spaces or control characters")
    }

    @Test(arguments: [
        (PushType.alert, 1, nil), (.alert, 5, nil), (.alert, 10, nil), (.alert, 7, "push.priority must be 1, 5 or 10, not 7"),
        (.background, 5, nil), (.liveactivity, 5, nil), (.liveactivity, 10, nil),
        (.liveactivity, 1, "push.priority must be 5 or 10 for liveactivity pushes, not 1"),
        (.voip, 10, nil),
    ] as [(PushType, Int, String?)])
    func priorityMatchesThePushType(type: PushType, priority: Int, message: String?) {
        let push = PushSpec(type: type, priority: priority, template: Fixture.template(Self.alert))
        #expect(problem(push) == message)
    }

    @Test func backgroundPriorityTenIsRejectedByBothRenderers() {
        let push = PushSpec(type: .background, priority: 10, template: Fixture.template(#"{"aps":{"content-available":1}}"#))
        #expect(problem(push) == "push.priority must be 5 for background pushes, not 10 (Apple: priority 10 is an error for background)")
        #expect(Fixture.templateError(push) == "push.priority: a background push must have priority 5, not 10")
        var templated = PushSpec(type: .background, priority: 5, template: Fixture.template(#"{"aps":{"content-available":1}}"#))
        templated.priorityTemplate = "{{prio}}"
        #expect(problem(templated) == "push.priority must be 5 for background pushes, not a placeholder")
        #expect(Fixture.templateError(templated) == "push.priority must be 5 for background pushes, not a placeholder")
    }

    @Test func jobLevelHeaders() throws {
        let push = PushSpec(type: .alert, priority: 5, template: Fixture.template(Self.alert), expiration: .relative(3600))
        let r = try renderer(push)
        #expect(!r.variesPerRecipient)
        let h = try #require(headers(r.render(Fixture.record([:]))))
        #expect(h.apnsId == "212bdd7c-ddc0-56d3-aeea-a10293757110", "RFC 4122 UUIDv5 of spring/<token> in herald's namespace")
        #expect(h.priority == 5 && h.pushType == .alert && h.collapseId == "herald:spring")
        #expect(h.fields(sentAt: 1_000).map { "\($0.name): \($0.value)" } == [
            "apns-id: 212bdd7c-ddc0-56d3-aeea-a10293757110", "apns-push-type: alert", "apns-topic: com.example.app",
            "apns-priority: 5", "apns-collapse-id: herald:spring", "apns-expiration: 4600",
        ])
        #expect(r.shared.collapseId == "herald:spring")
    }

    @Test func automaticCollapseIdFitsSixtyFourBytes() {
        #expect(HeaderRenderer.automaticCollapseId(campaign: "spring") == "herald:spring")
        let long = String(repeating: "x", count: 60)
        #expect(HeaderRenderer.automaticCollapseId(campaign: long) == "herald:42f2d97335669f86846b721a8aa58551")
    }

    @Test func collapseIdTemplatedPerRecipient() throws {
        let push = PushSpec(type: .alert, priority: 10, template: Fixture.template(Self.alert), collapseId: .fixed("order-{{order_id}}"))
        let r = try renderer(push)
        #expect(r.variesPerRecipient)
        #expect(headers(r.render(Fixture.strings(["order_id": "A17"])))?.collapseId == "order-A17")
        // 64 bytes is the limit, counted in UTF-8 bytes.
        let fits = String(repeating: "é", count: 29)   // 6 + 58 bytes
        #expect(headers(r.render(Fixture.strings(["order_id": fits])))?.collapseId?.utf8.count == 64)
        #expect(r.render(Fixture.strings(["order_id": fits + "x"]))
                == .failure(reason: .badFieldValue, field: "order_id", detail: "push.collapse_id is 65 bytes for this recipient; Apple allows at most 64 (BadCollapseId)"))
        // A field cannot smuggle another header in.
        #expect(r.render(Fixture.strings(["order_id": "1\r\napns-priority: 1"]))
                == .failure(reason: .badFieldValue, field: "order_id",
                            detail: #"push.collapse_id "order-1\r\napns-priority: 1" has a control character, which a header cannot carry"#))
        #expect(r.render(Fixture.strings([:]))
                == .failure(reason: .missingField, field: "order_id", detail: "field order_id is missing (used in push.collapse_id)"))
    }

    @Test func collapseIdRulesAtLoad() {
        let long = String(repeating: "c", count: 65)
        #expect(problem(PushSpec(type: .alert, priority: 10, template: Fixture.template(Self.alert), collapseId: .fixed("\(long){{x}}")))
                == "push.collapse_id is 65 bytes without its placeholders; Apple allows at most 64 (BadCollapseId)")
        #expect(problem(PushSpec(type: .alert, priority: 10, template: Fixture.template(Self.alert), collapseId: .fixed("a{{x")))
                == "push.collapse_id has an unterminated placeholder")
        #expect(problem(PushSpec(type: .alert, priority: 10, template: Fixture.template(Self.alert), collapseId: .fixed("a\tb")))
                == "push.collapse_id must not contain control characters")
        #expect(problem(PushSpec(type: .alert, priority: 10, template: Fixture.template(Self.alert), collapseId: .none)) == nil)
    }

    @Test func priorityTemplatedPerRecipient() throws {
        var push = PushSpec(type: .alert, priority: 10, template: Fixture.template(Self.alert))
        push.priorityTemplate = "{{prio|10}}"
        let r = try renderer(push)
        #expect(headers(r.render(Fixture.strings(["prio": "5"])))?.priority == 5)
        #expect(headers(r.render(Fixture.strings(["prio": " 1 "])))?.priority == 1)
        #expect(headers(r.render(Fixture.strings([:])))?.priority == 10)
        #expect(r.render(Fixture.strings(["prio": "high"]))
                == .failure(reason: .badFieldValue, field: "prio", detail: #"push.priority is "high", not one of 1, 5, 10 for alert pushes"#))
        var live = PushSpec(type: .liveactivity, priority: 10, template: Fixture.template(#"{"aps":{"event":"update","timestamp":1}}"#))
        live.priorityTemplate = "{{prio}}"
        #expect(try renderer(live).render(Fixture.strings(["prio": "1"]))
                == .failure(reason: .badFieldValue, field: "prio", detail: #"push.priority is "1", not one of 5, 10 for liveactivity pushes"#))
    }

    @Test func expirationTemplatedPerRecipient() throws {
        var push = PushSpec(type: .alert, priority: 10, template: Fixture.template(Self.alert))
        push.expirationTemplate = "{{expires}}"
        let r = try renderer(push)
        func expiration(_ value: String) -> ExpirationSpec? { headers(r.render(Fixture.strings(["expires": value])))?.expiration }
        #expect(expiration("0") == .immediate)
        #expect(expiration("3600") == .relative(3600))
        #expect(expiration("2h") == .relative(7200))
        #expect(expiration("1796083200") == .absolute(1_796_083_200))
        #expect(expiration("2026-12-01T00:00:00Z") == .absolute(1_796_083_200))
        #expect(headers(r.render(Fixture.strings(["expires": "2h"])))?.expirationValue(sentAt: 100) == 7300)
        #expect(r.render(Fixture.strings(["expires": "tomorrow"]))
                == .failure(reason: .badFieldValue, field: "expires",
                            detail: #"push.expiration is "tomorrow", not 0, a duration (3600, 1h, 7d), a UNIX time or a UTC time like 2026-12-01T00:00:00Z"#))
        var skipping = push
        skipping.missingField = .skipRecipient
        #expect(try renderer(skipping).render(Fixture.strings([:])) == .skip(field: "expires"))
        var empty = push
        empty.missingField = .empty
        #expect(headers(try renderer(empty).render(Fixture.strings([:])))?.expiration == .unset)
    }
}
