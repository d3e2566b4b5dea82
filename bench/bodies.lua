-- wrk script: POSTs JSON bodies read from BODIES (entries separated by NUL).
-- MODE=cycle: each request sends the next entry (turn after turn).
-- MODE=nonce: the entries are pieces of one body; each request joins them
-- with a fresh nonce between them, so no message was ever seen before.
local f = assert(io.open(os.getenv("BODIES"), "rb"))
local data = f:read("*a")
f:close()
local entries = {}
for piece in (data .. "\0"):gmatch("(.-)%z") do
  entries[#entries + 1] = piece
end
local mode = os.getenv("MODE") or "cycle"
local i = 0
local thread_id = 0

function setup(thread)
  thread_id = thread_id + 1
  thread:set("tid", thread_id)
end

function request()
  i = i + 1
  local body
  if mode == "nonce" then
    local parts = {}
    local nonce = string.format("%d-%d-%d ", tid or 0, i, math.random(1, 1e9))
    for k = 1, #entries do
      parts[#parts + 1] = entries[k]
      if k < #entries then
        parts[#parts + 1] = nonce
      end
    end
    body = table.concat(parts)
  else
    body = entries[(i - 1) % #entries + 1]
  end
  return wrk.format("POST", nil, { ["Content-Type"] = "application/json" }, body)
end

local errors = 0
function response(status, headers, body)
  if status ~= 200 then
    errors = errors + 1
    if errors <= 3 then
      io.stderr:write("status " .. status .. ": " .. body:sub(1, 300) .. "\n")
    end
  end
end
