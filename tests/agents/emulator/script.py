"""The session the provider plays: STEPS tool calls, each running a shell
command that appends to proof.txt and prints a few hundred lines ending in a
marker, then a final answer. The next step is read from the marker in the
most recent tool output, the part of the thread that survives compression,
never from a count of messages (condense replaces old ones by a summary);
after a client's own compaction, which keeps no tool output, from the
handoff summary the provider wrote for it (`handoff`)."""

import re

STEPS = 16
LINES = 300
FINAL = "All 16 scripted steps ran. AGENT-FINAL-OK"
# The marker is printed with printf, so the command's own text (which a
# client may echo next to the output) never contains it.
MARKER = re.compile(r"AGENT-STEP-(\d+)-DONE")


def command(step):
    return (
        f"echo 'step {step}' >> proof.txt && "
        f"seq 1 {LINES} | sed 's/^/step {step}: compiling module /' && "
        f"printf 'AGENT-STEP-%s-DONE\\n' {step}"
    )


def next_step(last_tool_output):
    """The step to run next: 1 when no tool ran yet, None when the script is
    over, or "lost" when the latest output carries no marker."""
    if last_tool_output is None:
        return 1
    found = MARKER.findall(last_tool_output)
    if not found:
        return "lost"
    done = int(found[-1])
    return done + 1 if done < STEPS else None


HANDOFF = "Scripted agent session"


def handoff(last_tool_output):
    """The answer to a request without tools (a title, a client's own
    compaction): the latest step's marker, so a session resumed from it
    goes on where it was."""
    found = MARKER.findall(last_tool_output or "")
    return f"{HANDOFF}: AGENT-STEP-{found[-1]}-DONE" if found else HANDOFF


def thinking(step):
    return f"Step {step} of {STEPS}: run the next build command and check its marker."


def final_text(step):
    if step == "lost":
        return "AGENT-LOST: the latest tool output carries no step marker."
    return FINAL


def text_of(content):
    """All text in a tool output: a string, or a list of text blocks/items."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(text_of(c.get("text", c.get("content", ""))) if isinstance(c, dict) else str(c)
                         for c in content)
    return ""
