-- wrk script for bench/load.py: the bodies of bodies.lua (BODIES, MODE),
-- plus answers counted by status, 503s that carry Retry-After, and the
-- latency percentiles, printed by done() as lines load.py reads.
dofile(os.getenv("BENCH_DIR") .. "/bodies.lua")

local threads = {}
local bodies_setup = setup

function setup(thread)
  bodies_setup(thread)
  table.insert(threads, thread)
end

statuses = {}
retry_after = 0

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
  if status == 503 and (headers["retry-after"] or headers["Retry-After"]) then
    retry_after = retry_after + 1
  end
end

function done(summary, latency, requests)
  local total, with_retry_after = {}, 0
  for _, t in ipairs(threads) do
    for status, n in pairs(t:get("statuses")) do
      total[status] = (total[status] or 0) + n
    end
    with_retry_after = with_retry_after + t:get("retry_after")
  end
  for status, n in pairs(total) do
    io.write(string.format("LOAD status %d %d\n", status, n))
  end
  io.write(string.format("LOAD retry_after %d\n", with_retry_after))
  local e = summary.errors
  io.write(string.format("LOAD socket_errors %d %d %d %d\n", e.connect, e.read, e.write, e.timeout))
  io.write(string.format("LOAD requests %d %d\n", summary.requests, summary.duration))
  for _, p in ipairs({50, 90, 99, 99.9}) do
    io.write(string.format("LOAD latency_us %s %d\n", p, latency:percentile(p)))
  end
  io.write(string.format("LOAD latency_us max %d\n", latency.max))
end
