"""A short request of its own to the session's model: no tools, not in the history.

WebFetch answers its `prompt` from a page this way (`ToolContext.ask_model`), so the page
itself never enters the conversation. The question is cut to what the window holds with
room for the answer; a failure is a `ToolError` the tool reports.
"""

from __future__ import annotations

from ..model.base import ChatModel, ContextOverflowError, Message, ModelError, ModelResponse
from ..model.scripted import ScriptError
from ..tools.results import ToolError
from ..window.tokens import ContextBudget, TokenCounter

MAX_ANSWER_TOKENS = 2_048


async def side_answer(
    model: ChatModel, budget: ContextBudget, counter: TokenCounter, system: str, question: str
) -> str:
    answer_tokens = min(budget.output_limit, MAX_ANSWER_TOKENS)
    room = max(2_000, int((budget.window - answer_tokens - 500) * counter.chars_per_token * 0.9))
    if len(question) > room:
        question = question[:room] + "\n[… the rest did not fit the model's context window]"
    messages: list[Message] = [{"role": "system", "content": system}, {"role": "user", "content": question}]
    response: ModelResponse | None = None
    try:
        async for item in model.stream(messages, [], max_tokens=answer_tokens):
            if isinstance(item, ModelResponse):
                response = item
    except (ModelError, ContextOverflowError) as exc:
        raise ToolError(exc.message) from exc
    except ScriptError as exc:
        raise ToolError(str(exc)) from exc
    answer = response.content.strip() if response is not None else ""
    if not answer:
        raise ToolError("the model returned an empty answer")
    return answer
