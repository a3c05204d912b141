"""Any OpenAI-compatible chat-completions endpoint: OpenAI itself, Ollama,
vLLM, LM Studio, llama.cpp's server, and Anthropic's and Google's
OpenAI-compatible endpoints.

`POST {base_url}/chat/completions` with the prompt's messages, the agent's
`model_name`, `temperature` and `max_tokens`, and its MCP tools as
functions. When the model asks for tools, each call runs over MCP, its
result goes back as a `tool` message, and the model is asked again - at
most REPLIES_MAX_TOOL_STEPS rounds; the round after that offers no tool
(`tool_choice: none`), so the model must answer in words. Token usage is
added up over every call.

Requests go through netguard (the address resolved once and pinned, no
redirects, bounded time and size). REPLIES_ALLOW_PRIVATE_MODEL_URLS (on by
default) lets the model server be on loopback or the LAN, on any port, as
self-hosted models are; off, only public addresses on the usual ports.
"""

import json

import requests

from ... import jsonbody, netguard
from ...nul_text import nul_replaced
from .base import ProviderError, ProviderReply

# Base URLs of the providers' OpenAI-compatible endpoints, when the agent's
# settings give none (openai and ollama come from the configuration).
BASE_URLS = {
    "anthropic": "https://api.anthropic.com/v1",
    "google": "https://generativelanguage.googleapis.com/v1beta/openai",
}
RETRYABLE_STATUSES = {408, 409, 425, 429, 500, 502, 503, 504}
_ERROR_CHARS = 300


class OpenAIProvider:
    def __init__(self, name="openai"):
        self.name = name

    def base_url(self, settings, config):
        if settings.get("base_url"):
            return settings["base_url"]
        if self.name == "ollama":
            return config["REPLIES_OLLAMA_BASE_URL"]
        return BASE_URLS.get(self.name, config["REPLIES_OPENAI_BASE_URL"])

    def api_key(self, settings, config):
        if settings.get("api_key"):
            return settings["api_key"]
        if self.name in ("openai", "openai-compatible"):
            return config.get("REPLIES_OPENAI_API_KEY")
        return None

    def body(self, prompt, settings):
        return {
            "model": settings["model_name"],
            "messages": prompt.messages(),
            "temperature": settings["temperature"],
            "max_tokens": settings["max_tokens"],
        }

    def describe(self, prompt, run):
        body = self.body(prompt, run.settings)
        if prompt.toolset:
            body["tools"] = prompt.toolset.functions()
        return {"url": _endpoint(self.base_url(run.settings, run.config)), "request": body}

    def generate(self, prompt, run):
        settings, config = run.settings, run.config
        body = self.body(prompt, settings)
        messages = body["messages"]
        max_steps = config["REPLIES_MAX_TOOL_STEPS"]
        usage, records, model = {}, [], None
        for step in range(max_steps + 1):
            if prompt.toolset:
                body["tools"] = prompt.toolset.functions()
                if step == max_steps:
                    body["tool_choice"] = "none"
            answer = self.post(body, settings, config)
            _add_usage(usage, answer.get("usage"))
            model = answer.get("model") or model
            message = _message(answer)
            calls = message.get("tool_calls") or []
            if calls and prompt.toolset and step < max_steps:
                messages.append(
                    {"role": "assistant", "content": message.get("content"), "tool_calls": calls}
                )
                for call in calls:
                    messages.append(_run_call(prompt.toolset, call, records))
                run.beat()
                continue
            text = message.get("content")
            if not isinstance(text, str) or not text.strip():
                raise ProviderError("the model gave no answer text", retryable=False)
            return ProviderReply(
                "answer", text.strip(), usage=usage or None, tool_calls=records, model=model
            )
        raise ProviderError("the model kept asking for tools", retryable=False)

    def post(self, body, settings, config):
        allow_private = config["REPLIES_ALLOW_PRIVATE_MODEL_URLS"]
        timeout = settings.get("timeout_seconds") or config["REPLIES_MODEL_TIMEOUT_SECONDS"]
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = self.api_key(settings, config)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        url = _endpoint(self.base_url(settings, config))
        try:
            response = netguard.safe_request(
                "POST",
                url,
                allow_private=allow_private,
                allowed_ports=() if allow_private else None,
                timeout=timeout,
                max_bytes=config["REPLIES_MODEL_MAX_RESPONSE_BYTES"],
                headers=headers,
                data=json.dumps(body),
            )
        except netguard.UnsafeURL as error:
            setting = "replies.allow_private_model_urls"  # on, any port is allowed too
            reason = netguard.refusal(error, setting, setting)
            raise ProviderError(f"the model URL is refused: {reason}", retryable=False) from None
        except requests.Timeout:
            raise ProviderError(f"the model gave no answer within {timeout} seconds") from None
        except requests.ConnectionError:
            raise ProviderError(f"cannot connect to the model server at {url}") from None
        except requests.RequestException as error:
            raise ProviderError(f"the model request failed ({type(error).__name__})") from None
        return _parsed(response, config)


def _endpoint(base_url):
    return base_url.rstrip("/") + "/chat/completions"


def _parsed(response, config):
    if response.status_code >= 300:
        snippet = nul_replaced(response.content[:_ERROR_CHARS].decode("utf-8", "replace"))
        snippet = snippet.strip()
        raise ProviderError(
            f"the model server answered HTTP {response.status_code}: {snippet}",
            retryable=response.status_code in RETRYABLE_STATUSES,
        )
    if getattr(response, "truncated", False):
        limit = config["REPLIES_MODEL_MAX_RESPONSE_BYTES"]
        raise ProviderError(f"the model's answer is larger than {limit} bytes", retryable=False)
    try:
        # Its limits: no RecursionError. The reply, its tool calls and their
        # arguments are stored: a NUL in them as U+FFFD.
        answer = nul_replaced(jsonbody.loads(response.content))
    except jsonbody.BodyError as error:
        raise ProviderError(error.told_of("the model's answer")) from None
    except ValueError:
        raise ProviderError("the model server did not answer JSON") from None
    if not isinstance(answer, dict):
        raise ProviderError("the model server's answer is not an object")
    return answer


def _message(answer):
    choices = answer.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ProviderError("the model's answer has no choices")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise ProviderError("the model's answer has no message")
    return message


def _run_call(toolset, call, records):
    function = call.get("function") if isinstance(call, dict) else None
    function = function if isinstance(function, dict) else {}
    content, record = toolset.call(str(function.get("name", "")), function.get("arguments"))
    records.append(record)
    return {"role": "tool", "tool_call_id": str(call.get("id", "")), "content": content}


# Token counts a model server may report for one call. Credits are charged
# by them: a count below zero failed the reply job as an internal error, one
# of 10**30 spent the workspace's credits at once. No call reads or writes a
# billion tokens; a count outside is taken as not reported.
_TOKEN_COUNTS = range(0, 10**9 + 1)


def _add_usage(total, usage):
    if not isinstance(usage, dict):
        return
    for name in ("prompt_tokens", "completion_tokens", "total_tokens"):
        value = usage.get(name)
        if type(value) is int and value in _TOKEN_COUNTS:
            total[name] = total.get(name, 0) + value
