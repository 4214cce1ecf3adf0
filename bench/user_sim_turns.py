"""What the simulated user says at three moments of a conversation, on the configured user endpoint.

    python bench/user_sim_turns.py --samples 8          # the embedded model unless OPENAI_BASE_URL is set

Plays each moment ``--samples`` times through :class:`~envscaler_core.rollout.UserSimulator`, the
class user-mode rollouts use (no response cache, one sampling seed per sample), with the demo's
kind of goal, a templated one-change request:

* ``opening``: the answer to the agent's greeting; wanted: the request, not a stop;
* ``done``: after the agent reports the change made; wanted: ``###STOP###``;
* ``question``: after the agent asks which record is meant; wanted: an answer, not a stop.

Prints per moment how many final replies stop, talk, or talk with a leaked thought ("Thought:" in
what the agent would read), and one sample of each.
"""

from __future__ import annotations

import argparse
import asyncio
from collections import Counter

from envscaler_core.llm import LLMClient
from envscaler_core.llm.config import resolve_llm_config
from envscaler_core.rollout.user_sim import GREETING, UserSimulator, UserTurn

GOAL = (
    "Please do this for me in the system: Change the books record 'book1': set title to 'New Title 1', "
    "set author to 'New Author 1', set due_back_date to '2023-01-03'. Then tell me that it is done."
)
OPENING = "Hi, I need to change the books record 'book1': set title to 'New Title 1', set author to 'New Author 1'."
MOMENTS = {
    "opening": None,
    "done": "Task Completed: book1 now has title 'New Title 1' and author 'New Author 1'.",
    "question": "Which book do you mean? Please give me its id.",
}


def outcome(turn: UserTurn) -> str:
    if turn.stop:
        return "stop"
    return "thought leaked" if "thought" in turn.text.lower() else "talk"


async def play(client: LLMClient, moment: str, sample: int, temperature: float) -> UserTurn:
    user = UserSimulator(client, GOAL, temperature=temperature, max_tokens=400)
    salt = f"bench:{moment}:{sample}"
    agent_says = MOMENTS[moment]
    if agent_says is None:
        return await user.opening(salt)
    # the conversation so far as the simulator stores it: the greeting and its opening request
    user.messages += [{"role": "user", "content": f"[Agent] {GREETING}"}, {"role": "assistant", "content": OPENING}]
    return await user.reply(agent_says, salt)


async def run(samples: int, temperature: float) -> None:
    client = LLMClient(resolve_llm_config("user", {"cache": False}), label="bench")
    print(f"user endpoint: {client.config.base_url or 'embedded'}; schema turns: {client.capabilities.schema_turns}")
    print(f"{'moment':<9}  {'stop':>4}  {'talk':>4}  {'thought leaked':>14}  example")
    for moment in MOMENTS:
        turns = [await play(client, moment, i, temperature) for i in range(samples)]
        counts = Counter(outcome(t) for t in turns)
        example = next((t.text for t in turns if outcome(t) != "stop"), turns[0].text)
        print(
            f"{moment:<9}  {counts['stop']:>4}  {counts['talk']:>4}  {counts['thought leaked']:>14}  {example[:90]!r}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=8, help="plays of each moment")
    parser.add_argument("--temperature", type=float, default=0.7, help="the simulator's sampling temperature")
    args = parser.parse_args(argv)
    asyncio.run(run(args.samples, args.temperature))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
