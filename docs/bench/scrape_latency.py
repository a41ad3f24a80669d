"""GET /metrics latency on one kept-alive connection, one request every 0.1 s.

usage: scrape_latency.py HTTP_PORT SECONDS [START_DELAY_S]
Prints one JSON line: scrapes, p50, p99, max in milliseconds.
"""
import http.client, sys, time, json
port = int(sys.argv[1]); dur = float(sys.argv[2]); delay = float(sys.argv[3]) if len(sys.argv) > 3 else 0.3
time.sleep(delay)
c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
lat = []
end = time.time() + dur
while time.time() < end:
    t0 = time.perf_counter()
    c.request("GET", "/metrics"); r = c.getresponse(); r.read()
    lat.append((time.perf_counter() - t0) * 1000)
    time.sleep(0.1)
lat.sort()
q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))]
print(json.dumps({"n": len(lat), "p50": round(q(0.5), 2), "p99": round(q(0.99), 2), "max": round(lat[-1], 2)}))
