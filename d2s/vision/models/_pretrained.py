"""The one answer to `pretrained=True`: d2s ships no weights and fetches
nothing, because nothing read from a file or the network may become code or
parameters behind the user's back. The error says what to write instead."""


def check_pretrained(pretrained, arch):
    """Raise for `pretrained=True` so a ported script never trains or predicts
    with random weights it believes are ImageNet's."""
    if pretrained:
        raise ValueError(
            f"d2s.vision.models.{arch}(pretrained=True): d2s ships no pretrained weights "
            f"and downloads nothing. Build it with pretrained=False, then load a "
            f"checkpoint you have: model.set_state_dict(d2s.load(path)) (parameter "
            f"names are those of paddle.vision.models.{arch}).")
