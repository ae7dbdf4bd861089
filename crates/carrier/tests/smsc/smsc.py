"""A scripted SMSC for dialtone's SMPP tests, on the `smpp34` package's SMPP server.

The SMPP side (framing, binds, windowing, timers, PDUs) is smpp34's; this script only
decides what the SMSC answers, by the destination's last digit:

  0, 2 (receipt id in hexadecimal), others: accepted, receipts ENROUTE then DELIVRD
  1 accepted, receipt UNDELIV            3 accepted, receipt EXPIRED
  4 ESME_RTHROTTLED twice, then accepted 5 ESME_RINVDSTADR (permanent)
  6 never answered                       7 accepted, no receipt
  8 ESME_RMSGQFUL always                 9 accepted, receipt in TLVs only (DELIVERED)

Reports one JSON object per line on stdout; takes JSON commands on stdin:
  {"cmd": "mo", "from": "...", "to": "...", "text": "...", "parts": 1, "mode": "udh"|"sar",
   "from_ton": 1}
  {"cmd": "set", ...}: how every later submit is answered, any of
      "delay_ms": N            answer each submit_sm N ms late (a slow SMSC)
      "ids": "dec"|"hex-resp"|"hex-receipt"
                               message ids: decimal; or 8 padded hex digits in the response
                               and decimal in the receipts; or the reverse
      "receipt_first": bool    send the receipts before the submit_sm_resp
      "refuse_seq": N, "refuse_times": K, "refuse_status": S
                               refuse part N of every multi-part message (UDH) K times with
                               status S (0x58 ESME_RTHROTTLED, 0x14 ESME_RMSGQFUL)
  {"cmd": "receipt", "id": "...", "stat": "DELIVRD"}: a receipt for any id
  {"cmd": "unbind"}: the SMSC unbinds every session; reports unbind-answered or unbind-failed
Usage: python3 smsc.py PORT [--quiet] [--tls TLSPORT CERT KEY] [--tap TAPPORT]
  --quiet: no report per submit (benchmarks)
  --tls: also accept TLS on TLSPORT (Python's ssl), relayed to the SMPP server
  --tap: also accept TCP on TAPPORT, relayed to the SMPP server, reporting the command id
         of every PDU the ESME sends ({"ev": "esme-pdu", "id": ...}) and when the ESME
         closes ({"ev": "esme-closed"}): what the wire carried, in order
"""

import asyncio
import json
import sys

import smpp34


def out(**fields):
    print(json.dumps(fields), flush=True)


class Smsc:
    def __init__(self, port):
        self.server = smpp34.Server(host="127.0.0.1", port=port, system_id="TESTSMSC")
        self.receivers = {}
        self.counter = 1000
        self.throttled = {}
        self.held = []
        self.mo_ref = 0
        self.delay_ms = 0
        self.ids = "dec"
        self.receipt_first = False
        self.refuse = None  # (seq, times, status)
        self.refused = {}
        self.sessions = {}

    def receiver(self):
        for esme in self.receivers.values():
            return esme
        return None

    def response_id(self, n):
        return format(n, "08X") if self.ids == "hex-resp" else str(n)

    def receipt_id(self, n, hexid):
        if self.ids == "hex-receipt":
            return format(n, "08X")
        if self.ids == "hex-resp":
            return str(n)
        return format(n, "X") if hexid else str(n)

    async def receipt(self, ev, n, stat, hexid=False, tlv_only=False, src="", dst=""):
        esme = self.receiver()
        shown = self.receipt_id(n, hexid) if isinstance(n, int) else n
        if esme is None:
            out(ev="receipt-lost", id=shown)
            return
        src = ev.source_addr if ev is not None else src
        dst = ev.destination_addr if ev is not None else dst
        if tlv_only:
            tlvs = [
                smpp34.Tlv(smpp34.TLV_RECEIPTED_MESSAGE_ID, shown.encode() + b"\0"),
                smpp34.Tlv(smpp34.TLV_MESSAGE_STATE, bytes([2])),
            ]
            resp = await esme.deliver_sm(destination_addr=src, source_addr=dst,
                                         esm_class=0x04, tlvs=tlvs)
        else:
            err = "000" if stat in ("DELIVRD", "ENROUTE") else "001"
            text = (f"id:{shown} sub:001 dlvrd:001 submit date:2506011200 "
                    f"done date:2506011201 stat:{stat} err:{err} text:")
            resp = await esme.deliver_sm(destination_addr=src, source_addr=dst,
                                         esm_class=0x04, short_message=text.encode())
        out(ev="receipt", id=shown, stat=stat, status=resp.command_status)

    async def on_submit(self, ev):
        dest = ev.destination_addr
        last = dest[-1:] if dest else "0"
        if QUIET and last == "7":
            self.counter += 1
            ev.accept(message_id=str(self.counter))
            return
        out(ev="submit", dest=dest, src=ev.source_addr, src_ton=ev.source_addr_ton,
            dest_ton=ev.dest_addr_ton, dc=ev.data_coding, esm=ev.esm_class,
            rd=ev.registered_delivery, sm=ev.short_message.hex(),
            tlvs=[[t.tag, t.value.hex()] for t in ev.tlvs])
        if last == "6":
            self.held.append(ev)
            return
        if self.delay_ms:
            await asyncio.sleep(self.delay_ms / 1000)
        if self.refuse is not None and ev.esm_class & 0x40 and len(ev.short_message) > 6:
            seq, times, status = self.refuse
            ref, part = ev.short_message[3], ev.short_message[5]
            key = (dest, ref)
            if part == seq and self.refused.get(key, 0) < times:
                self.refused[key] = self.refused.get(key, 0) + 1
                out(ev="refused", seq=part, ref=ref, status=status)
                ev.reject(status)
                return
        if last == "5":
            ev.reject(0x0B)
            return
        if last == "8":
            ev.reject(smpp34.ESME_RMSGQFUL)
            return
        if last == "4":
            key = (dest, ev.short_message)
            seen = self.throttled.get(key, 0)
            if seen < 2:
                self.throttled[key] = seen + 1
                ev.reject(smpp34.ESME_RTHROTTLED)
                return
        self.counter += 1
        n = self.counter
        if not self.receipt_first:
            ev.accept(message_id=self.response_id(n))
            out(ev="accepted", id=self.response_id(n), dest=dest)
        if last == "7":
            pass
        elif last == "1":
            await self.receipt(ev, n, "UNDELIV")
        elif last == "3":
            await self.receipt(ev, n, "EXPIRED")
        elif last == "9":
            await self.receipt(ev, n, "DELIVRD", tlv_only=True)
        else:
            await self.receipt(ev, n, "ENROUTE", hexid=last == "2")
            await self.receipt(ev, n, "DELIVRD", hexid=last == "2")
        if self.receipt_first:
            ev.accept(message_id=self.response_id(n))
            out(ev="accepted", id=self.response_id(n), dest=dest)

    async def mo(self, cmd):
        esme = self.receiver()
        if esme is None:
            out(ev="mo-lost")
            return
        text = cmd["text"]
        parts = max(1, int(cmd.get("parts", 1)))
        size = -(-len(text) // parts)
        chunks = [text[i * size:(i + 1) * size] for i in range(parts)]
        self.mo_ref = (self.mo_ref + 1) % 256
        ucs2 = any(ord(c) > 127 for c in text)
        for i, chunk in enumerate(chunks):
            body = chunk.encode("utf-16-be") if ucs2 else chunk.encode("ascii")
            kwargs = dict(destination_addr=cmd["to"].lstrip("+"), source_addr=cmd["from"].lstrip("+"),
                          source_addr_ton=int(cmd.get("from_ton", 1)), dest_addr_ton=1,
                          data_coding=8 if ucs2 else 0)
            if parts > 1 and cmd.get("mode", "udh") == "sar":
                kwargs["tlvs"] = [
                    smpp34.Tlv(smpp34.TLV_SAR_MSG_REF_NUM, self.mo_ref.to_bytes(2, "big")),
                    smpp34.Tlv(smpp34.TLV_SAR_TOTAL_SEGMENTS, bytes([parts])),
                    smpp34.Tlv(smpp34.TLV_SAR_SEGMENT_SEQNUM, bytes([i + 1])),
                ]
            elif parts > 1:
                body = bytes([5, 0, 3, self.mo_ref, parts, i + 1]) + body
                kwargs["esm_class"] = 0x40
            resp = await esme.deliver_sm(short_message=body, **kwargs)
            out(ev="mo-part", seq=i + 1, status=resp.command_status)

    async def events(self):
        while True:
            ev = await self.server.next()
            if isinstance(ev, smpp34.Esme):
                self.sessions[ev.session_id] = ev
                if ev.can_receive:
                    self.receivers[ev.session_id] = ev
                out(ev="bound", system_id=ev.system_id, receives=ev.can_receive)
            elif isinstance(ev, smpp34.SubmitSmEvent):
                if QUIET and ev.destination_addr.endswith("7"):
                    self.counter += 1
                    ev.accept(message_id=str(self.counter))
                else:
                    asyncio.create_task(self.on_submit(ev))
            elif isinstance(ev, smpp34.Unbound):
                self.receivers.pop(ev.session_id, None)
                self.sessions.pop(ev.session_id, None)
                out(ev="unbound")

    async def commands(self):
        loop = asyncio.get_running_loop()
        while True:
            line = await loop.run_in_executor(None, sys.stdin.readline)
            if not line:
                return
            cmd = json.loads(line)
            if cmd.get("cmd") == "mo":
                asyncio.create_task(self.mo(cmd))
            elif cmd.get("cmd") == "set":
                self.delay_ms = int(cmd.get("delay_ms", self.delay_ms))
                self.ids = cmd.get("ids", self.ids)
                self.receipt_first = bool(cmd.get("receipt_first", self.receipt_first))
                if "refuse_seq" in cmd:
                    self.refuse = (int(cmd["refuse_seq"]), int(cmd.get("refuse_times", 1)),
                                   int(cmd.get("refuse_status", smpp34.ESME_RTHROTTLED)))
                    self.refused = {}
                out(ev="set")
            elif cmd.get("cmd") == "receipt":
                asyncio.create_task(self.receipt(None, cmd["id"], cmd.get("stat", "DELIVRD"),
                                                 src=cmd.get("src", "33600000000"),
                                                 dst=cmd.get("dst", "447700900000")))
            elif cmd.get("cmd") == "unbind":
                asyncio.create_task(self.unbind_all())
            elif cmd.get("cmd") == "quit":
                return

    async def unbind_all(self):
        for esme in list(self.sessions.values()):
            try:
                await asyncio.wait_for(esme.unbind(), 3)
                out(ev="unbind-answered")
            except Exception as e:  # noqa: BLE001 - reported to the test
                out(ev="unbind-failed", error=repr(e))


async def relay(reader, writer, port):
    up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)

    async def pipe(r, w):
        try:
            while data := await r.read(65536):
                w.write(data)
                await w.drain()
        finally:
            w.close()

    await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer), return_exceptions=True)


async def tap(reader, writer, port):
    """Relays one ESME connection, reporting each PDU the ESME sends."""
    up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)

    async def from_esme():
        buffered = b""
        try:
            while data := await reader.read(65536):
                up_writer.write(data)
                await up_writer.drain()
                buffered += data
                while len(buffered) >= 8:
                    length = int.from_bytes(buffered[:4], "big")
                    if len(buffered) < length:
                        break
                    out(ev="esme-pdu", id=hex(int.from_bytes(buffered[4:8], "big")))
                    buffered = buffered[length:]
        finally:
            out(ev="esme-closed")
            up_writer.close()

    async def to_esme():
        try:
            while data := await up_reader.read(65536):
                writer.write(data)
                await writer.drain()
        finally:
            writer.close()

    await asyncio.gather(from_esme(), to_esme(), return_exceptions=True)


async def main(port):
    smsc = Smsc(port)
    await smsc.server.start()
    if "--tls" in sys.argv:
        import ssl
        i = sys.argv.index("--tls")
        tls_port, cert, key = int(sys.argv[i + 1]), sys.argv[i + 2], sys.argv[i + 3]
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        await asyncio.start_server(lambda r, w: relay(r, w, port), "127.0.0.1", tls_port, ssl=context)
    if "--tap" in sys.argv:
        tap_port = int(sys.argv[sys.argv.index("--tap") + 1])
        await asyncio.start_server(lambda r, w: tap(r, w, port), "127.0.0.1", tap_port)
    out(ev="ready", port=port)
    events = asyncio.create_task(smsc.events())
    await smsc.commands()
    events.cancel()
    await smsc.server.stop()


QUIET = "--quiet" in sys.argv

if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
