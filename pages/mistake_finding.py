"""Placeholder: this page is being built."""

import streamlit as st

st.title("mistake_finding")
st.info("This page is not built yet.")
